/**
 * Pekko HTTP edges of the agent. {@link io.cadastre.http.CniSocketServer}: the CNI endpoint on a
 * Unix domain socket (mode 0600), for the {@code cadastre} plugin executable. The CNI protocol
 * itself lives in {@code io.cadastre.cni}.
 */
package io.cadastre.http;
