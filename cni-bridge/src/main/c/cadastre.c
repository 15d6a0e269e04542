/*
 * cadastre: the CNI plugin executable (also installed as cadastre-ipam).
 *
 * The container runtime execs this once per pod operation, so it is a thin, libc-only client: it
 * answers VERSION itself and forwards everything else, as one HTTP/1.1 request over a Unix socket,
 * to the local cadastre agent, which owns every CNI rule. The wire protocol and the errors this
 * program reports itself are specified in ../../../DESIGN.md; keep the two in step.
 *
 * No heap: stdin and the reply live in fixed static buffers (bounded reads), so there is nothing
 * to free and nothing to leak. stdin is never printed or logged: it may carry credentials.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#define STDIN_MAX ((size_t)1 << 20)       /* 1 MiB of netconf */
#define REPLY_MAX ((size_t)4 << 20)       /* 4 MiB of reply, status line and headers included */
#define SEND_TIMEOUT_S 30                 /* connect (full backlog) and each write */
#define RECV_TIMEOUT_S 300                /* each read of the reply */
#define DEFAULT_SOCKET "/run/cadastre/cni.sock"
#define DEFAULT_VERSION "1.1.0"
#define SUPPORTED_VERSIONS "[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]"

/* One byte over each limit, so that "exactly at the limit" and "over it" can be told apart. */
static char in[STDIN_MAX + 1];
static char reply[REPLY_MAX + 1];

/* The cniVersion every answer carries; points into `in` once stdin has been scanned. */
static const char *version = DEFAULT_VERSION;
static size_t version_len = sizeof DEFAULT_VERSION - 1;

/* ---- output ------------------------------------------------------------------------------ */

/* Loops over short writes and EINTR (a stop/continue can interrupt socket calls that have a
 * timeout set, even without signal handlers). MSG_NOSIGNAL: an agent that hangs up mid-request
 * must give an error object (code 11), not kill us with SIGPIPE. */
static int write_all(int fd, int is_socket, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = is_socket ? send(fd, p, n, MSG_NOSIGNAL) : write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* A small write buffer, so the request head goes out in one or two syscalls rather than one per
 * header. The first error sticks and is reported by out_flush. */
struct out {
    int fd, is_socket, failed;
    size_t n;
    char buf[4096];
};

static int out_flush(struct out *o)
{
    if (!o->failed && o->n > 0 && write_all(o->fd, o->is_socket, o->buf, o->n) != 0)
        o->failed = 1;
    o->n = 0;
    return o->failed ? -1 : 0;
}

static void out_put(struct out *o, const char *p, size_t n)
{
    if (o->n + n > sizeof o->buf) {
        out_flush(o);
        if (n > sizeof o->buf) { /* large payloads (the body) bypass the buffer */
            if (!o->failed && write_all(o->fd, o->is_socket, p, n) != 0)
                o->failed = 1;
            return;
        }
    }
    memcpy(o->buf + o->n, p, n);
    o->n += n;
}

static void out_str(struct out *o, const char *s) { out_put(o, s, strlen(s)); }

/* Length of the well-formed UTF-8 sequence at s, or 0 if it is not one (overlong, surrogate,
 * beyond U+10FFFF, truncated). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len;
    unsigned long cp, min;
    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        len = 2; cp = s[0] & 0x1Fu; min = 0x80;
    } else if ((s[0] & 0xF0u) == 0xE0) {
        len = 3; cp = s[0] & 0x0Fu; min = 0x800;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        len = 4; cp = s[0] & 0x07u; min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0u) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return len;
}

/* A JSON string literal. Error details can hold a socket path taken from the environment, i.e.
 * arbitrary bytes: invalid UTF-8 becomes U+FFFD so the runtime can always parse the object. */
static void out_json_string(struct out *o, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    out_put(o, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char c = u[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            out_put(o, e, 2);
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            out_put(o, e, 6);
        } else if (c >= 0x80) {
            size_t len = utf8_seq(u + i, n - i);
            if (len == 0) {
                out_str(o, "\\ufffd");
                i++;
            } else {
                out_put(o, s + i, len);
                i += len;
            }
            continue;
        } else {
            out_put(o, s + i, 1);
        }
        i++;
    }
    out_put(o, "\"", 1);
}

/* Prints a CNI error object on stdout and returns the exit status 1. */
__attribute__((format(printf, 3, 4)))
static int fail(int code, const char *msg, const char *details_fmt, ...)
{
    char details[512]; /* long enough for any message below with a 107-byte path */
    char num[16];
    va_list ap;
    va_start(ap, details_fmt);
    int dn = vsnprintf(details, sizeof details, details_fmt, ap);
    va_end(ap);
    size_t dlen = dn < 0 ? 0 : (size_t)dn < sizeof details ? (size_t)dn : sizeof details - 1;
    snprintf(num, sizeof num, "%d", code);

    struct out o = {.fd = STDOUT_FILENO};
    out_str(&o, "{\"cniVersion\":\"");
    out_put(&o, version, version_len);
    out_str(&o, "\",\"code\":");
    out_str(&o, num);
    out_str(&o, ",\"msg\":");
    out_json_string(&o, msg, strlen(msg));
    out_str(&o, ",\"details\":");
    out_json_string(&o, details, dlen);
    out_str(&o, "}");
    out_flush(&o);
    return 1;
}

/* ---- input ------------------------------------------------------------------------------- */

/* Reads fd until EOF or until buf is full. Returns 0, or -1 with errno set (the bytes read so far
 * are still counted in *len). A timeout (SO_RCVTIMEO) shows up as EAGAIN/EWOULDBLOCK. */
static int read_bounded(int fd, char *buf, size_t cap, size_t *len)
{
    size_t n = 0;
    while (n < cap) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            *len = n;
            return -1;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    *len = n;
    return 0;
}

/* memmem, which is not in C11 or POSIX. */
static const char *find(const char *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    const char *end = hay + n;
    for (const char *p = hay; (size_t)(end - p) >= k; p++) {
        p = memchr(p, needle[0], (size_t)(end - p) - k + 1);
        if (p == NULL)
            return NULL;
        if (memcmp(p, needle, k) == 0)
            return p;
    }
    return NULL;
}

static int is_json_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* The tiny scan DESIGN.md allows instead of a JSON parser: the raw (still escaped) value of the
 * first occurrence of "key" that is followed by a colon and a string. In valid JSON such a match
 * is an object key: a string value is never followed by ':', and a quote inside a string is
 * escaped (hence the backslash check). Returns 0 if there is none. */
static int json_string_value(const char *buf, size_t n, const char *key, const char **val, size_t *len)
{
    char quoted[32];
    int qn = snprintf(quoted, sizeof quoted, "\"%s\"", key);
    const char *end = buf + n;
    const char *p = buf;
    if (qn < 0 || (size_t)qn >= sizeof quoted)
        return 0;
    for (; (p = find(p, (size_t)(end - p), quoted)) != NULL; p += qn) {
        if (p > buf && p[-1] == '\\')
            continue;
        const char *q = p + qn;
        while (q < end && is_json_space(*q))
            q++;
        if (q == end || *q != ':')
            continue;
        q++;
        while (q < end && is_json_space(*q))
            q++;
        if (q == end || *q != '"')
            continue;
        const char *start = ++q;
        while (q < end && *q != '"')
            q += (*q == '\\' && q + 1 < end) ? 2 : 1;
        if (q >= end)
            return 0; /* unterminated: leave the verdict on the netconf to the agent */
        *val = start;
        *len = (size_t)(q - start);
        return 1;
    }
    return 0;
}

/* ---- the request ------------------------------------------------------------------------- */

/* Header values are percent-encoded so that any env value (spaces, CR/LF, UTF-8) survives as a
 * legal HTTP field value; the agent decodes them. Unset variables send no header at all, which
 * lets the agent tell "unset" from "empty". */
static void put_cni_header(struct out *o, const char *name, const char *env)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *v = getenv(env);
    if (v == NULL)
        return;
    out_str(o, name);
    out_put(o, ": ", 2);
    for (const unsigned char *s = (const unsigned char *)v; *s != '\0'; s++) {
        if (*s < 0x21 || *s > 0x7E || *s == '%') {
            char e[3] = {'%', hex[*s >> 4], hex[*s & 15]};
            out_put(o, e, 3);
        } else {
            out_put(o, (const char *)s, 1);
        }
    }
    out_put(o, "\r\n", 2);
}

static int send_request(int fd, size_t body_len)
{
    char cl[64];
    struct out o = {.fd = fd, .is_socket = 1};
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\n", body_len);
    out_str(&o, "POST /v1/cni HTTP/1.1\r\n"
                "Host: cadastre\r\n"
                "Content-Type: application/json\r\n");
    out_str(&o, cl);
    out_str(&o, "Connection: close\r\n");
    put_cni_header(&o, "CNI-Command", "CNI_COMMAND");
    put_cni_header(&o, "CNI-ContainerID", "CNI_CONTAINERID");
    put_cni_header(&o, "CNI-Netns", "CNI_NETNS");
    put_cni_header(&o, "CNI-Ifname", "CNI_IFNAME");
    put_cni_header(&o, "CNI-Args", "CNI_ARGS");
    put_cni_header(&o, "CNI-Path", "CNI_PATH");
    out_put(&o, "\r\n", 2);
    out_put(&o, in, body_len);
    /* No shutdown(SHUT_WR) after the body: a server that does not support half-close may drop
     * the connection, and the reply with it. "Connection: close" is what ends the exchange. */
    return out_flush(&o);
}

/* ---- the reply --------------------------------------------------------------------------- */

enum parse { PARSE_OK, PARSE_SHORT, PARSE_BAD };

/* Decodes a chunked body in place (an HTTP/1.1 client must accept it, even though a strict
 * entity with Content-Length is what the agent is expected to send). Trailers are ignored. */
static enum parse dechunk(char *p, size_t n, size_t *out_len)
{
    size_t r = 0, w = 0;
    for (;;) {
        size_t size = 0, digits = 0;
        for (; r < n; r++, digits++) {
            char c = p[r];
            unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                       : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                       : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;
            if (d == 16)
                break;
            size = size * 16 + d;
            if (size > REPLY_MAX)
                return PARSE_BAD;
        }
        if (r == n)
            return PARSE_SHORT;
        if (digits == 0)
            return PARSE_BAD;
        const char *eol = find(p + r, n - r, "\r\n"); /* skips any chunk extension */
        if (eol == NULL)
            return PARSE_SHORT;
        r = (size_t)(eol - p) + 2;
        if (size == 0) { /* last chunk: whole once the (empty or not) trailer section ends */
            if (find(p + r - 2, n - r + 2, "\r\n\r\n") == NULL)
                return PARSE_SHORT;
            *out_len = w;
            return PARSE_OK;
        }
        if (n - r < size + 2)
            return PARSE_SHORT;
        memmove(p + w, p + r, size);
        w += size;
        r += size;
        if (p[r] != '\r' || p[r + 1] != '\n')
            return PARSE_BAD;
        r += 2;
    }
}

static int header_is(const char *line, size_t n, const char *name)
{
    size_t k = strlen(name);
    return n > k && line[k] == ':' && strncasecmp(line, name, k) == 0;
}

/* Splits the raw reply into status and body. PARSE_SHORT means the agent closed before a whole
 * reply (which DESIGN.md makes code 11); PARSE_BAD that it is not an HTTP/1.x reply we accept,
 * with *why saying how. */
static enum parse parse_reply(char *buf, size_t n, int *status, char **body, size_t *body_len,
                              const char **why)
{
    const char *head_end = find(buf, n, "\r\n\r\n");
    *why = "not an HTTP/1.x response";
    if (n >= 7 && memcmp(buf, "HTTP/1.", 7) != 0)
        return PARSE_BAD;
    if (head_end == NULL)
        return PARSE_SHORT;
    if (head_end - buf < 12 || buf[8] != ' ' || buf[9] < '1' || buf[9] > '5'
        || buf[10] < '0' || buf[10] > '9' || buf[11] < '0' || buf[11] > '9'
        || (buf[12] != ' ' && buf[12] != '\r'))
        return PARSE_BAD;
    *status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');

    int chunked = 0, has_length = 0;
    size_t length = 0;
    const char *line = find(buf, n, "\r\n") + 2;
    while (line < head_end + 2) {
        const char *eol = find(line, (size_t)(head_end + 2 - line), "\r\n");
        size_t ln = (size_t)(eol - line);
        const char *v = memchr(line, ':', ln);
        if (v != NULL) {
            v++;
            while (v < eol && (*v == ' ' || *v == '\t'))
                v++;
            size_t vn = (size_t)(eol - v);
            while (vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
                vn--;
            if (header_is(line, ln, "Transfer-Encoding")) {
                *why = "unsupported Transfer-Encoding";
                if (vn != 7 || strncasecmp(v, "chunked", 7) != 0)
                    return PARSE_BAD;
                chunked = 1;
            } else if (header_is(line, ln, "Content-Length")) {
                *why = "bad Content-Length";
                if (vn == 0)
                    return PARSE_BAD;
                length = 0;
                for (size_t i = 0; i < vn; i++) {
                    if (v[i] < '0' || v[i] > '9')
                        return PARSE_BAD;
                    length = length * 10 + (size_t)(v[i] - '0');
                    if (length > REPLY_MAX)
                        return PARSE_BAD;
                }
                has_length = 1;
            }
        }
        line = eol + 2;
    }

    *body = buf + (head_end - buf) + 4;
    size_t avail = n - (size_t)(*body - buf);
    if (chunked) {
        *why = "bad chunked encoding";
        return dechunk(*body, avail, body_len);
    }
    if (has_length && avail < length)
        return PARSE_SHORT;
    *body_len = has_length ? length : avail;
    return PARSE_OK;
}

/* ---- main -------------------------------------------------------------------------------- */

/* SO_SNDTIMEO/SO_RCVTIMEO expiry surfaces as EAGAIN, whose strerror text would mislead. */
static const char *socket_error(int e)
{
    return e == EAGAIN || e == EWOULDBLOCK ? "timed out" : strerror(e);
}

static int is_version(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] == '.' || (s[i] >= '0' && s[i] <= '9')))
            return 0;
    return 1;
}

/* Fills *sa from, in order: "agentSocket" in stdin, $CADASTRE_AGENT_SOCKET, the default.
 * Returns 0, or the exit status after printing the error. */
static int agent_address(struct sockaddr_un *sa, size_t in_len)
{
    const char *path;
    size_t n;
    memset(sa, 0, sizeof *sa);
    sa->sun_family = AF_UNIX;
    if (json_string_value(in, in_len, "agentSocket", &path, &n)) {
        /* Escapes are not decoded: a path needing them is refused rather than misread. */
        for (size_t i = 0; i < n; i++)
            if (path[i] == '\\' || (unsigned char)path[i] < 0x20)
                return fail(7, "invalid network config",
                            "agentSocket must be a plain string without escapes");
        if (n == 0 || n >= sizeof sa->sun_path)
            return fail(7, "invalid network config",
                        "agentSocket must be 1 to %zu bytes long", sizeof sa->sun_path - 1);
    } else if ((path = getenv("CADASTRE_AGENT_SOCKET")) != NULL && path[0] != '\0') {
        n = strlen(path);
        if (n >= sizeof sa->sun_path)
            return fail(4, "invalid environment variable CADASTRE_AGENT_SOCKET",
                        "the socket path must be at most %zu bytes long", sizeof sa->sun_path - 1);
    } else {
        path = DEFAULT_SOCKET;
        n = strlen(path);
    }
    memcpy(sa->sun_path, path, n);
    return 0;
}

int main(void)
{
    size_t in_len;
    /* stdin first, so that every answer, errors included, can echo the caller's cniVersion. */
    int read_err = read_bounded(STDIN_FILENO, in, sizeof in, &in_len) != 0 ? errno : 0;
    const char *v;
    size_t vn;
    if (json_string_value(in, in_len, "cniVersion", &v, &vn) && is_version(v, vn)) {
        version = v;
        version_len = vn;
    }
    if (read_err != 0)
        return fail(5, "cannot read the network config", "read stdin: %s", strerror(read_err));
    if (in_len > STDIN_MAX)
        return fail(5, "cannot read the network config",
                    "stdin is larger than %zu bytes", STDIN_MAX);

    const char *cmd = getenv("CNI_COMMAND");
    if (cmd == NULL || cmd[0] == '\0')
        return fail(4, "invalid environment variable CNI_COMMAND", "CNI_COMMAND is unset or empty");

    if (strcmp(cmd, "VERSION") == 0) {
        struct out o = {.fd = STDOUT_FILENO};
        out_str(&o, "{\"cniVersion\":\"");
        out_put(&o, version, version_len);
        out_str(&o, "\",\"supportedVersions\":" SUPPORTED_VERSIONS "}");
        return out_flush(&o) == 0 ? 0 : 1;
    }

    struct sockaddr_un sa;
    int rc = agent_address(&sa, in_len);
    if (rc != 0)
        return rc;
    const char *sp = sa.sun_path;

    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0)
        return fail(11, "cadastre agent unreachable", "socket: %s", strerror(errno));
    /* SO_SNDTIMEO also bounds connect() on a Unix socket whose listen backlog is full. */
    struct timeval snd = {.tv_sec = SEND_TIMEOUT_S}, rcv = {.tv_sec = RECV_TIMEOUT_S};
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd) != 0
        || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof rcv) != 0) {
        int e = errno;
        close(fd);
        return fail(11, "cadastre agent unreachable", "setsockopt: %s", strerror(e));
    }
    /* An interrupted Unix connect has not connected yet, so retrying it is safe. */
    while (connect(fd, (const struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno == EINTR)
            continue;
        int e = errno;
        close(fd);
        return fail(11, "cadastre agent unreachable", "connect %s: %s", sp, socket_error(e));
    }
    if (send_request(fd, in_len) != 0) {
        int e = errno;
        close(fd);
        return fail(11, "cadastre agent unreachable", "send to %s: %s", sp, socket_error(e));
    }
    size_t n;
    int e = read_bounded(fd, reply, sizeof reply, &n) != 0 ? errno : 0;
    close(fd);
    if (e != 0)
        return fail(11, "cadastre agent unreachable", "read from %s: %s", sp, socket_error(e));
    if (n > REPLY_MAX)
        return fail(5, "bad reply from the cadastre agent", "reply larger than %zu bytes", REPLY_MAX);

    int status = 0;
    char *body = NULL;
    size_t body_len = 0;
    const char *why;
    switch (parse_reply(reply, n, &status, &body, &body_len, &why)) {
    case PARSE_SHORT:
        return fail(11, "cadastre agent unreachable",
                    "%s closed the connection before a whole reply", sp);
    case PARSE_BAD:
        return fail(5, "bad reply from the cadastre agent", "%s", why);
    case PARSE_OK:
        break;
    }
    if (status != 200 && body_len == 0)
        return fail(11, "cadastre agent failed", "HTTP status %d with an empty body", status);
    struct out o = {.fd = STDOUT_FILENO};
    out_put(&o, body, body_len);
    if (out_flush(&o) != 0)
        return 1;
    return status == 200 ? 0 : 1;
}
