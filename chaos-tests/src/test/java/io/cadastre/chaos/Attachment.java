package io.cadastre.chaos;

/**
 * One pod interface as a runtime names it: the host whose agent served it, the container ID, and
 * the interface name, always {@value #IFNAME} here. Container IDs are unique per run, so an
 * attachment is added at most once as new.
 */
record Attachment(String host, String containerId) {
    static final String IFNAME = "eth0";

    @Override
    public String toString() {
        return host + "/" + containerId;
    }
}
