package io.cadastre.dataplane;

import static io.cadastre.dataplane.LibC.C;

import java.nio.charset.StandardCharsets;
import jnr.ffi.Memory;
import jnr.ffi.Pointer;

/**
 * TX checksum offload of a device, through the ethtool ioctl (SIOCETHTOOL with ETHTOOL_GTXCSUM /
 * ETHTOOL_STXCSUM, linux/ethtool.h) on a datagram socket of the calling thread's network
 * namespace, which is where the device is looked up by name.
 *
 * <p>Why the ioctl and not ethtool's generic netlink (ETHTOOL_MSG_FEATURES_SET): the only reason
 * Cadastre turns the offload off is the VXLAN bug of kernels up to 5.7 (Calico#3145,
 * Flannel#1279), and ethtool netlink exists only from 5.6 on, so it would miss nearly every
 * affected kernel (4.19, 5.4). The ioctl works on all of them and still on current ones; in the
 * kernel, STXCSUM clears every TX checksum feature the device may change (NETIF_F_CSUM_MASK &
 * hw_features), as {@code ethtool -K dev tx off} does, which is also what Calico does.
 */
final class Ethtool {
    private static final int ETHTOOL_GTXCSUM = 0x16;
    private static final int ETHTOOL_STXCSUM = 0x17;

    /** sizeof(struct ifreq) on 64-bit Linux: IFNAMSIZ name, then a union whose ifr_data is a pointer. */
    private static final int IFREQ_LEN = 40;

    private static final int IFNAMSIZ = 16;

    private Ethtool() {}

    /** @return whether any TX checksum offload is on for {@code ifname} */
    static boolean txChecksum(String ifname) throws SyscallException {
        return call(ifname, ETHTOOL_GTXCSUM, 0, "ETHTOOL_GTXCSUM") != 0;
    }

    /** Turns every TX checksum offload of {@code ifname} on or off. */
    static void setTxChecksum(String ifname, boolean on) throws SyscallException {
        call(ifname, ETHTOOL_STXCSUM, on ? 1 : 0, "ETHTOOL_STXCSUM " + (on ? "on" : "off"));
    }

    /** One struct ethtool_value command: {u32 cmd; u32 data}. @return data after the call */
    private static int call(String ifname, int command, int data, String step)
            throws SyscallException {
        byte[] name = ifname.getBytes(StandardCharsets.UTF_8);
        if (name.length >= IFNAMSIZ) {
            throw new SyscallException(
                    step + " " + ifname + ": name longer than " + (IFNAMSIZ - 1) + " bytes");
        }
        Pointer value = Memory.allocateDirect(LibC.runtime(), 8);
        value.putInt(0, command);
        value.putInt(4, data);
        Pointer ifreq = Memory.allocateDirect(LibC.runtime(), IFREQ_LEN);
        ifreq.put(0, name, 0, name.length);
        ifreq.putByte(name.length, (byte) 0);
        ifreq.putAddress(IFNAMSIZ, value.address());
        int fd = C.socket(LibC.AF_INET, LibC.SOCK_DGRAM | LibC.SOCK_CLOEXEC, 0);
        if (fd < 0) {
            throw new SyscallException(step + " " + ifname + ": socket(AF_INET)", LibC.errno());
        }
        try {
            if (C.ioctl(fd, LibC.SIOCETHTOOL, ifreq) != 0) {
                throw new SyscallException(step + " " + ifname, LibC.errno());
            }
            return value.getInt(4);
        } finally {
            LibC.closeQuietly(fd);
        }
    }
}
