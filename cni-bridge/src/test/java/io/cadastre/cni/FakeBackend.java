package io.cadastre.cni;

import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/**
 * A {@link CniBackend} for tests: records every call and answers with what the test configured
 * (by default: a fixed ADD result, success for the rest).
 */
public final class FakeBackend implements CniBackend {
    /** One recorded call: the method name and its arguments. */
    public record Call(String method, List<Object> args) {}

    public static final AddResult DEFAULT_RESULT =
            new AddResult(
                    List.of(new Interface("eth0", "0a:58:c6:12:00:05", "/var/run/netns/pod1")),
                    List.of(new IpConfig("198.18.0.5/32", "169.254.1.1", 0)),
                    List.of(new Route("0.0.0.0/0", "169.254.1.1")));

    public final List<Call> calls = new CopyOnWriteArrayList<>();
    public volatile Function<AddRequest, CompletionStage<AddResult>> onAdd =
            r -> CompletableFuture.completedFuture(DEFAULT_RESULT);
    public volatile CompletionStage<Void> onDel = CompletableFuture.completedFuture(null);
    public volatile CompletionStage<List<String>> onCheck =
            CompletableFuture.completedFuture(List.of());
    public volatile CompletionStage<Void> onGc = CompletableFuture.completedFuture(null);
    public volatile CompletionStage<Void> onStatus = CompletableFuture.completedFuture(null);

    @Override
    public CompletionStage<AddResult> add(AddRequest request) {
        calls.add(new Call("add", List.of(request)));
        return onAdd.apply(request);
    }

    @Override
    public CompletionStage<Void> del(Attachment attachment, boolean ipamOnly) {
        calls.add(new Call("del", List.of(attachment, ipamOnly)));
        return onDel;
    }

    @Override
    public CompletionStage<List<String>> check(
            Attachment attachment, boolean ipamOnly, AddResult prevResult, Bandwidth bandwidth) {
        calls.add(new Call("check", List.of(attachment, ipamOnly, prevResult, bandwidth)));
        return onCheck;
    }

    @Override
    public CompletionStage<Void> gc(String network, Set<AttachmentRef> validAttachments) {
        calls.add(new Call("gc", List.of(network, validAttachments)));
        return onGc;
    }

    @Override
    public CompletionStage<Void> status(List<String> pools) {
        calls.add(new Call("status", List.of(pools)));
        return onStatus;
    }
}
