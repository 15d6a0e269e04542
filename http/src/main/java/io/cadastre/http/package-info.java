/**
 * The agent's HTTP edge. {@link io.cadastre.http.CniSocketServer}: the CNI endpoint on a Unix
 * domain socket (mode 0600), for the {@code cadastre} plugin executable, on Netty's native epoll
 * transport. The CNI protocol itself lives in {@code io.cadastre.cni}.
 */
package io.cadastre.http;
