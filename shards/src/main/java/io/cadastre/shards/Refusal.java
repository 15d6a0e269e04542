package io.cadastre.shards;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility;
import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.Objects;
import org.apache.pekko.pattern.StatusReply;

/**
 * An entity's refusal of a command, sent as the error of its {@link StatusReply}: the kind in
 * {@link #reason()}, the words in the message. {@link EntityAsks} turns it into an
 * {@link IpamException} with the same reason, so the refusal keeps its meaning up to the CNI error
 * code.
 *
 * <p>Replies cross members: Pekko serializes a {@code StatusReply} error as a payload of its own
 * serializer, which for this class is {@code jackson-cbor} (it is {@link CborSerializable}; Pekko
 * prefers that binding to the Java serializer bound to {@code Throwable}). Only the reason and the
 * message travel: no stack trace (none is recorded) and no cause.
 */
@JsonAutoDetect(
        fieldVisibility = Visibility.NONE,
        getterVisibility = Visibility.NONE,
        isGetterVisibility = Visibility.NONE,
        setterVisibility = Visibility.NONE)
public final class Refusal extends RuntimeException implements CborSerializable {
    private static final long serialVersionUID = 1L;

    private final IpamException.Reason reason;

    /**
     * @param reason the kind of refusal; not null
     * @param message why, for people: names the entity and what stood in the way
     */
    @JsonCreator
    public Refusal(
            @JsonProperty("reason") IpamException.Reason reason,
            @JsonProperty("message") String message) {
        super(message, null, false, false);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /** @return the error reply refusing with this reason and message */
    public static <T> StatusReply<T> reply(IpamException.Reason reason, String message) {
        return StatusReply.error(new Refusal(reason, message));
    }

    @JsonProperty("reason")
    public IpamException.Reason reason() {
        return reason;
    }

    @JsonProperty("message")
    @Override
    public String getMessage() {
        return super.getMessage();
    }

    @Override
    public String toString() {
        return "Refusal(" + reason + ": " + getMessage() + ")";
    }
}
