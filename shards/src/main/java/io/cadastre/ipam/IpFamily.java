package io.cadastre.ipam;

/** An address family, with its address width in bits. */
public enum IpFamily {
    V4(32),
    V6(128);

    private final int bits;

    IpFamily(int bits) {
        this.bits = bits;
    }

    /** @return the address width in bits: 32 or 128 */
    public int bits() {
        return bits;
    }

    /** @return the CNI result's spelling of the family for versions before 1.0.0: "4" or "6" */
    public String cniVersionField() {
        return this == V4 ? "4" : "6";
    }
}
