package io.cadastre.testsupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.IOException;
import org.junit.jupiter.api.Test;

class CniSocketClientTest {
    @Test
    void readsTheStatusAndTheBody() throws IOException {
        CniSocketClient.Reply r =
                CniSocketClient.parse("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{\"ips\":1}");
        assertEquals(200, r.status());
        assertEquals("{\"ips\":1}", r.body());
        assertEquals(
                503,
                CniSocketClient.parse("HTTP/1.1 503 Service Unavailable\r\n\r\n{\"code\":11}")
                        .status());
    }

    @Test
    void refusesWhatIsNotHttp() {
        assertThrows(IOException.class, () -> CniSocketClient.parse("SSH-2.0-OpenSSH"));
        assertThrows(IOException.class, () -> CniSocketClient.parse(""));
    }
}
