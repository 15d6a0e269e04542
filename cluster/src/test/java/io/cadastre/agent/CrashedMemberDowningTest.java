package io.cadastre.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import org.apache.pekko.actor.Address;
import org.junit.jupiter.api.Test;

/**
 * What a probe of a cluster port finds, on loopback: a process that listens but accepts nothing
 * (as a stopped one) is there, a closed port is a gone process.
 */
class CrashedMemberDowningTest {
    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    private static Address member(int port) {
        return new Address("pekko", "cadastre", "127.0.0.1", port);
    }

    @Test
    void aListeningPortThatNeverAcceptsIsAliveAndAClosedOneRefuses() throws Exception {
        int port;
        try (ServerSocket listening = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            port = listening.getLocalPort();
            // Never accept(): the kernel completes the handshake into the backlog, as for a stopped
            // process.
            assertEquals(
                    CrashedMemberDowning.Outcome.ACCEPTED,
                    CrashedMemberDowning.connect(member(port), TIMEOUT));
            assertEquals(
                    CrashedMemberDowning.Outcome.ACCEPTED,
                    CrashedMemberDowning.connect(member(port), TIMEOUT));
        }
        assertEquals(
                CrashedMemberDowning.Outcome.REFUSED,
                CrashedMemberDowning.connect(member(port), TIMEOUT));
    }

    @Test
    void anAddressWithoutHostOrPortIsNoAnswer() {
        assertEquals(
                CrashedMemberDowning.Outcome.NO_ANSWER,
                CrashedMemberDowning.connect(new Address("pekko", "cadastre"), TIMEOUT));
    }

    @Test
    void aRefusalIsCheckedAgainSoonerThanTheRegularProbes() {
        CrashedMemberDowning.Settings settings = CrashedMemberDowning.Settings.DEFAULT;
        assertEquals(
                settings.recheck(), settings.nextProbeAfter(CrashedMemberDowning.Outcome.REFUSED));
        assertEquals(
                settings.interval(),
                settings.nextProbeAfter(CrashedMemberDowning.Outcome.ACCEPTED));
        assertEquals(
                settings.interval(),
                settings.nextProbeAfter(CrashedMemberDowning.Outcome.NO_ANSWER));
        assertTrue(settings.recheck().compareTo(settings.interval()) < 0);
    }
}
