package io.cadastre.chaos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cadastre.chaos.Checker.Violation;
import io.cadastre.chaos.Operation.Kind;
import io.cadastre.chaos.Operation.Phase;
import io.cadastre.chaos.Operation.Purpose;
import io.cadastre.chaos.Operation.Status;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The checker on hand-made histories: no root, no cluster, milliseconds to run. */
class CheckerTest {
    private static final Set<String> POOL = Set.of("10.0.0.0", "10.0.0.1", "10.0.0.2", "10.0.0.3");
    private static final Checker.Spec SPEC = new Checker.Spec(42, POOL);

    private final List<Operation> ops = new ArrayList<>();

    /** An operation invoked at {@code from} ms and completed at {@code to} ms. */
    private Operation op(
            Phase phase,
            Kind kind,
            Purpose purpose,
            String host,
            String container,
            long from,
            long to,
            Status status,
            int code,
            String... addresses) {
        Attachment a = container == null ? null : new Attachment(host, container);
        Operation op =
                new Operation(
                        ops.size() + 1,
                        phase,
                        kind,
                        purpose,
                        host,
                        0,
                        a,
                        false,
                        Times.millis(from),
                        to < 0 ? Operation.PENDING : Times.millis(to),
                        status,
                        List.of(addresses),
                        code,
                        null);
        ops.add(op);
        return op;
    }

    private void add(String host, String container, long from, long to, String v4, String v6) {
        op(Phase.WORKLOAD, Kind.ADD, Purpose.NEW, host, container, from, to, Status.OK, 0, v4, v6);
    }

    private void addUnknown(String host, String container, long from, long to) {
        op(Phase.WORKLOAD, Kind.ADD, Purpose.NEW, host, container, from, to, Status.UNKNOWN, 11);
    }

    private void del(String host, String container, long from, long to, Status status) {
        op(
                Phase.WORKLOAD,
                Kind.DEL,
                Purpose.RELEASE,
                host,
                container,
                from,
                to,
                status,
                status == Status.OK ? 0 : 11);
    }

    private List<Violation> check() {
        return Checker.check(ops, SPEC);
    }

    private static List<String> kinds(List<Violation> violations) {
        return violations.stream().map(Violation::kind).toList();
    }

    @Test
    void anAddressReusedAfterItsDelWasInvokedIsNoViolation() {
        add("h1", "a", 0, 10, "10.0.0.1", "fd00::1");
        del("h1", "a", 20, 40, Status.OK);
        // b's ADD completes after a's DEL was invoked, even before that DEL completed: fine.
        add("h2", "b", 15, 30, "10.0.0.1", "fd00::2");
        assertEquals(List.of(), check());
    }

    @Test
    void twoAttachmentsHoldingOneAddressAtOnceIsUnique() {
        add("h1", "a", 0, 10, "10.0.0.1", "fd00::1");
        add("h2", "b", 12, 15, "10.0.0.1", "fd00::2");
        del("h1", "a", 20, 25, Status.OK);
        List<Violation> v = check();
        assertEquals(List.of("UNIQUE"), kinds(v));
        assertTrue(
                v.get(0).message().contains("10.0.0.1") && v.get(0).message().contains("seed 42"),
                v.toString());
        assertEquals(
                Set.of(new Attachment("h1", "a"), new Attachment("h2", "b")),
                v.get(0).attachments());
    }

    @Test
    void ipv6AddressesAreCheckedToo() {
        add("h1", "a", 0, 10, "10.0.0.1", "fd00::1");
        add("h2", "b", 12, 15, "10.0.0.2", "fd00::1");
        assertEquals(List.of("UNIQUE"), kinds(check()));
    }

    @Test
    void anUnknownAddHoldsNothingUntilARetrySucceeds() {
        addUnknown("h1", "a", 0, 5);
        add("h2", "b", 3, 4, "10.0.0.1", "fd00::2");
        assertEquals(List.of(), check(), "while a's outcome is unknown, b may hold the address");
        op(
                Phase.WORKLOAD,
                Kind.ADD,
                Purpose.RESOLVE,
                "h1",
                "a",
                6,
                7,
                Status.OK,
                0,
                "10.0.0.1",
                "fd00::1");
        assertEquals(
                List.of("UNIQUE"),
                kinds(check()),
                "a's retry succeeded with b's address while b holds it");
    }

    @Test
    void anUnknownAddThatIsDeletedHoldsNothing() {
        addUnknown("h1", "a", 0, 5);
        del("h1", "a", 6, 7, Status.OK);
        add("h2", "b", 3, 4, "10.0.0.1", "fd00::2");
        assertEquals(List.of(), check());
    }

    @Test
    void aHoldingEndsAtTheFirstDelEvenIfThatDelsOutcomeWasUnknown() {
        add("h1", "a", 0, 10, "10.0.0.1", "fd00::1");
        del("h1", "a", 20, 30, Status.UNKNOWN);
        add("h2", "b", 25, 31, "10.0.0.1", "fd00::2");
        del("h1", "a", 32, 33, Status.OK);
        assertEquals(List.of(), check());
    }

    @Test
    void aFailedRetryEndsTheHolding() {
        add("h1", "a", 0, 10, "10.0.0.1", "fd00::1");
        op(Phase.WORKLOAD, Kind.ADD, Purpose.RETRY, "h1", "a", 20, 30, Status.FAIL, 103);
        add("h2", "b", 25, 31, "10.0.0.1", "fd00::2");
        del("h1", "a", 32, 33, Status.OK);
        assertEquals(List.of(), check());
    }

    @Test
    void aRetryAnsweringOtherAddressesIsIdempotent() {
        add("h1", "a", 0, 10, "10.0.0.1", "fd00::1");
        op(
                Phase.WORKLOAD,
                Kind.ADD,
                Purpose.RETRY,
                "h1",
                "a",
                20,
                30,
                Status.OK,
                0,
                "10.0.0.2",
                "fd00::1");
        assertEquals(List.of("IDEMPOTENT"), kinds(check()));
    }

    @Test
    void aSuccessWithoutBothFamiliesIsAResultViolation() {
        add("h1", "a", 0, 10, "10.0.0.1", "10.0.0.2");
        assertEquals(List.of("RESULT"), kinds(check()));
    }

    @Test
    void gcEndsTheHoldingsOfItsHostOnly() {
        add("h1", "a", 0, 10, "10.0.0.1", "fd00::1");
        add("h2", "c", 0, 10, "10.0.0.2", "fd00::3");
        op(Phase.WORKLOAD, Kind.GC, Purpose.SWEEP, "h1", null, 20, 21, Status.OK, 0);
        add("h2", "b", 22, 23, "10.0.0.1", "fd00::2");
        assertEquals(List.of(), check());
        add("h3", "d", 24, 25, "10.0.0.2", "fd00::4");
        assertEquals(List.of("UNIQUE"), kinds(check()));
    }

    @Test
    void durableWantsTheAcknowledgedAddressesBack() {
        add("h1", "a", 0, 10, "10.0.0.1", "fd00::1");
        add("h1", "b", 0, 10, "10.0.0.2", "fd00::2");
        add("h2", "c", 0, 10, "10.0.0.3", "fd00::3");
        add("h2", "d", 0, 10, "10.0.0.0", "fd00::4");
        del("h2", "d", 11, 12, Status.OK);
        // a: unknown, then the same addresses: fine.
        op(Phase.DURABLE, Kind.ADD, Purpose.VERIFY, "h1", "a", 100, 110, Status.UNKNOWN, 11);
        op(
                Phase.DURABLE,
                Kind.ADD,
                Purpose.VERIFY,
                "h1",
                "a",
                111,
                112,
                Status.OK,
                0,
                "10.0.0.1",
                "fd00::1");
        // b: other addresses.
        op(
                Phase.DURABLE,
                Kind.ADD,
                Purpose.VERIFY,
                "h1",
                "b",
                100,
                101,
                Status.OK,
                0,
                "10.0.0.0",
                "fd00::2");
        // c: never checked. d: deleted, so not expected.
        List<Violation> v = check();
        assertEquals(List.of("DURABLE", "DURABLE"), kinds(v), v.toString());
        assertTrue(v.get(0).message().contains("h1/b"), v.toString());
        assertTrue(v.get(1).message().contains("h2/c"), v.toString());
    }

    @Test
    void aDefiniteFailureOfTheDurabilityCheckIsALoss() {
        add("h1", "a", 0, 10, "10.0.0.1", "fd00::1");
        op(Phase.DURABLE, Kind.ADD, Purpose.VERIFY, "h1", "a", 100, 101, Status.FAIL, 100);
        assertEquals(List.of("DURABLE"), kinds(check()));
    }

    private void exhaust(String host, String container, long at, String v4) {
        op(
                Phase.EXHAUST,
                Kind.ADD,
                Purpose.FILL,
                host,
                container,
                at,
                at + 1,
                Status.OK,
                0,
                v4,
                "fd00::" + container);
    }

    private void exhausted(String host, long at) {
        op(
                Phase.EXHAUST,
                Kind.ADD,
                Purpose.FILL,
                host,
                host + "-last",
                at,
                at + 1,
                Status.FAIL,
                100);
    }

    private void gc(String host, long at) {
        op(Phase.CLEANUP, Kind.GC, Purpose.SWEEP, host, null, at, at + 1, Status.OK, 0);
    }

    @Test
    void theWholePoolComesBackAfterCleanup() {
        gc("h1", 100);
        gc("h2", 100);
        exhaust("h1", "f1", 200, "10.0.0.0");
        exhaust("h2", "f2", 200, "10.0.0.1");
        exhaust("h1", "f3", 202, "10.0.0.2");
        exhaust("h2", "f4", 202, "10.0.0.3");
        exhausted("h1", 204);
        exhausted("h2", 204);
        assertEquals(List.of(), check());
    }

    @Test
    void anAddressThatNeverComesBackIsReported() {
        gc("h1", 100);
        exhaust("h1", "f1", 200, "10.0.0.0");
        exhaust("h1", "f2", 202, "10.0.0.1");
        exhaust("h1", "f3", 204, "10.0.0.3");
        exhausted("h1", 206);
        List<Violation> v = check();
        assertEquals(List.of("RELEASED"), kinds(v));
        assertTrue(v.get(0).message().contains("[10.0.0.2]"), v.toString());
    }

    @Test
    void theExhaustionCheckMustEndWithCode100OnEveryHostAfterGc() {
        gc("h1", 100);
        exhaust("h1", "f1", 200, "10.0.0.0");
        exhaust("h1", "f2", 202, "10.0.0.1");
        exhaust("h2", "f3", 204, "10.0.0.2");
        exhaust("h2", "f4", 204, "10.0.0.3");
        exhausted("h1", 206);
        List<Violation> v = check();
        assertEquals(List.of("RELEASED", "RELEASED"), kinds(v), v.toString());
        assertTrue(v.get(0).message().contains("GC never succeeded on h2"), v.toString());
        assertTrue(v.get(1).message().contains("h2 did not end with code 100"), v.toString());
    }

    @Test
    void aSequenceNumberWrittenTwiceIsASingleWriterViolation() {
        List<Violation> v =
                Checker.singleWriter(
                        List.of(
                                "DUPLICATE Block|10.0.0.0-30 seq 7: [written t1 by writer aaaa: "
                                        + "AddressAssigned {\"address\":\"10.0.0.2\"}] [written t2 by writer bbbb: AddressesReleased {}]"),
                        42);
        assertEquals(List.of("SINGLE_WRITER"), kinds(v));
        assertEquals(Set.of("10.0.0.2"), v.get(0).addresses());
        assertEquals(List.of(), Checker.singleWriter(List.of(), 42));
    }

    @Test
    void liveAfterTheWorkloadIsWhatIsHeld() {
        add("h1", "a", 0, 10, "10.0.0.1", "fd00::1");
        add("h1", "b", 0, 10, "10.0.0.2", "fd00::2");
        addUnknown("h1", "c", 0, 10);
        del("h1", "b", 11, 12, Status.UNKNOWN);
        del("h1", "b", 13, 14, Status.OK);
        assertEquals(
                Set.of(new Attachment("h1", "a")), Checker.liveAfter(ops, Phase.WORKLOAD).keySet());
    }
}
