package io.cadastre.bench.report;

/**
 * Cadastre against a peer measured in the same run, for one metric.
 *
 * @param metric the {@link Figure#metric()} compared
 * @param subject the subject (Cadastre)
 * @param peer the peer's {@link Figure#subject()}
 * @param ratio subject's median ÷ peer's median (below 1 is faster for a latency, slower for a throughput)
 */
public record Comparison(String metric, String subject, String peer, double ratio) {
    /** @return the comparison of two figures' medians */
    public static Comparison of(Figure subject, Figure peer) {
        return new Comparison(
                subject.metric(),
                subject.subject(),
                peer.subject(),
                subject.distribution().median() / peer.distribution().median());
    }
}
