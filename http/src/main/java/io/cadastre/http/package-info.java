/**
 * The agent's HTTP edge. {@link io.cadastre.http.CniSocketServer}: the CNI endpoint on a Unix
 * domain socket (mode 0600), for the {@code cadastre} plugin executable, on Netty's native epoll
 * transport. The CNI protocol itself lives in {@code io.cadastre.cni} (module cni-bridge); the
 * admin API, the agent's other HTTP endpoint, in {@code io.cadastre.admin} beside this package.
 */
package io.cadastre.http;
