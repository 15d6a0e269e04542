package io.cadastre.dataplane;

/**
 * A pod's bandwidth limits, as a runtime asks for them with the {@code bandwidth} capability (CNI
 * conventions, {@code runtimeConfig.bandwidth}; containerd and CRI-O fill it from the pod's
 * {@code kubernetes.io/ingress-bandwidth} and {@code kubernetes.io/egress-bandwidth} annotations).
 * Ingress is what the pod receives, egress what it sends, as the annotations mean them.
 *
 * <p>Each direction is a token bucket filter (TBF): ingress on the host end's root (the host end
 * sends what the pod receives), egress on an IFB device that the host end's ingress hook redirects
 * the pod's packets to (the host end receives what the pod sends). The reference {@code bandwidth}
 * plugin shapes the same two places; node-actor/DESIGN.md (*Bandwidth*).
 *
 * @param ingress the limit of what the pod receives, or null for none
 * @param egress the limit of what the pod sends, or null for none
 */
public record Bandwidth(Shaping ingress, Shaping egress) {
    /** No limit either way. */
    public static final Bandwidth NONE = new Bandwidth(null, null);

    /** @return whether some direction is limited */
    public boolean limited() {
        return ingress != null || egress != null;
    }

    /**
     * One direction's token bucket.
     *
     * @param rate bytes per second, 1 to {@value #MAX_RATE} (1 Pbit/s, the most Kubernetes
     *     accepts in a bandwidth annotation)
     * @param burst the bucket, bytes: what may pass at once after a pause, 1 to 2^32-1 (the
     *     kernel's TCA_TBF_BURST is a u32)
     */
    public record Shaping(long rate, long burst) {
        /** The queue a TBF holds beyond its bucket, as time at the rate: the reference plugin's latency. */
        public static final long LATENCY_MILLIS = 25;

        /**
         * A burst of at least this many bits stands for "none given": containerd sends 2^32-1
         * bits and CRI-O 2^35-9 bits when the pod's annotation names only a rate (containerd's
         * {@code toCNIBandWidth}, CRI-O's {@code newPodNetwork}). A bucket that large would let
         * half a gigabyte pass unshaped.
         */
        public static final long UNSET_BURST_BITS = 0xFFFF_FFFFL;

        /** A burst not given is this long at the rate, at least {@link #MIN_DEFAULT_BURST} bytes. */
        public static final long DEFAULT_BURST_MILLIS = 10;

        /** The smallest default bucket, bytes: one largest packet of any MTU (64 KiB). */
        public static final long MIN_DEFAULT_BURST = 65_536;

        /** Bytes per second: 1 Pbit/s. */
        public static final long MAX_RATE = 125_000_000_000_000L;

        private static final long MAX_U32 = 0xFFFF_FFFFL;

        public Shaping {
            if (rate < 1 || rate > MAX_RATE) {
                throw new IllegalArgumentException(
                        "rate " + rate + " B/s is outside 1 to " + MAX_RATE);
            }
            if (burst < 1 || burst > MAX_U32) {
                throw new IllegalArgumentException(
                        "burst " + burst + " B is outside 1 to " + MAX_U32);
            }
        }

        /**
         * @param rateBits bits per second, as {@code ingressRate} / {@code egressRate}: at least 8
         * @param burstBits bits, as {@code ingressBurst} / {@code egressBurst}; 0 (or at least
         *     {@link #UNSET_BURST_BITS}) for the default: {@value #DEFAULT_BURST_MILLIS} ms at the
         *     rate, at least {@value #MIN_DEFAULT_BURST} bytes
         * @return the bucket in bytes
         * @throws IllegalArgumentException for a rate below 8 bits per second or above 1 Pbit/s
         */
        public static Shaping fromBits(long rateBits, long burstBits) {
            long rate = rateBits / 8;
            long burst =
                    burstBits <= 0 || burstBits >= UNSET_BURST_BITS
                            ? Math.max(
                                    MIN_DEFAULT_BURST,
                                    Math.min(MAX_U32, rate * DEFAULT_BURST_MILLIS / 1000))
                            : Math.max(1, burstBits / 8);
            return new Shaping(rate, burst);
        }

        /**
         * @param mtu the shaped device's MTU, bytes
         * @return the bucket the kernel gets: at least one frame of the MTU, since a TBF never
         *     passes a packet larger than its bucket (it splits a GSO packet, and drops any other)
         */
        public long bucket(int mtu) {
            return Math.min(MAX_U32, Math.max(burst, (long) mtu + 14));
        }

        /**
         * @return the TBF's limit, bytes: the bucket plus {@value #LATENCY_MILLIS} ms at the rate
         *     (what may wait for tokens), at most 2^32-1
         */
        public long limit(int mtu) {
            return Math.min(MAX_U32, bucket(mtu) + rate * LATENCY_MILLIS / 1000);
        }

        @Override
        public String toString() {
            return rate * 8 + " bit/s, burst " + burst + " B";
        }
    }
}
