/*
 * cadastre: the CNI plugin executable (also installed as cadastre-ipam).
 *
 * The container runtime execs this once per pod operation, so it is a thin, libc-only client: it
 * answers VERSION itself and forwards everything else, as one HTTP/1.1 request over a Unix socket,
 * to the local cadastre agent, which owns every CNI rule. The wire protocol and the errors this
 * program reports itself are specified in cni-bridge/DESIGN.md; keep the two in step.
 *
 * No heap: stdin and the reply live in fixed static buffers (bounded reads), so there is nothing
 * to free and nothing to leak. stdin is never printed or logged: it may carry credentials.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#define STDIN_MAX ((size_t)1 << 20)       /* 1 MiB of netconf */
#define REPLY_MAX ((size_t)4 << 20)       /* 4 MiB of reply, status line and headers included */
#define SEND_TIMEOUT_S 30                 /* connect (full backlog) and each write */
#define RECV_TIMEOUT_S 300                /* each read of the reply */
#define DEFAULT_SOCKET "/run/cadastre/cni.sock"
#define SUN_PATH_MAX (sizeof ((struct sockaddr_un *)0)->sun_path - 1) /* 107: room for the NUL */
/* Deeper netconfs are not walked (so no agentSocket is taken from them): Jackson's default nesting
 * limit, which the agent parses with, so both give up on the same documents. */
#define JSON_MAX_DEPTH 1000
/* The longest CNI variable values forwarded, in bytes before percent-encoding
 * (cni-bridge/DESIGN.md, "Request"). Checked before connecting, so that the agent's header
 * limit, which is larger even when every byte is percent-encoded, never cuts a request off while
 * it is being sent. */
#define CNI_COMMAND_MAX 64       /* the verbs are at most 7 bytes; room for new ones */
#define CNI_CONTAINERID_MAX 255
#define CNI_NETNS_MAX 4095       /* PATH_MAX - 1 */
#define CNI_IFNAME_MAX 15        /* IFNAMSIZ - 1 */
#define CNI_ARGS_MAX 8192
#define CNI_PATH_MAX 8192
#define DEFAULT_VERSION "1.1.0"
#define SUPPORTED_VERSIONS "[\"0.3.0\",\"0.3.1\",\"0.4.0\",\"1.0.0\",\"1.1.0\"]"

/* One byte over each limit, so that "exactly at the limit" and "over it" can be told apart. */
static char in[STDIN_MAX + 1];
static char reply[REPLY_MAX + 1];

/* The cniVersion every answer carries; points into `in` once stdin has been walked. */
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
 * header. The first error sticks (its errno in `err`) and is reported by out_flush. */
struct out {
    int fd, is_socket, failed, err;
    size_t n;
    char buf[4096];
};

static void out_write(struct out *o, const char *p, size_t n)
{
    if (!o->failed && write_all(o->fd, o->is_socket, p, n) != 0) {
        o->failed = 1;
        o->err = errno;
    }
}

static int out_flush(struct out *o)
{
    if (o->n > 0)
        out_write(o, o->buf, o->n);
    o->n = 0;
    return o->failed ? -1 : 0;
}

static void out_put(struct out *o, const char *p, size_t n)
{
    if (o->n + n > sizeof o->buf) {
        out_flush(o);
        if (n > sizeof o->buf) { /* large payloads (the body) bypass the buffer */
            out_write(o, p, n);
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
    char details[512]; /* long enough for any message below with two 107-byte paths */
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

/* ---- the netconf: a bounded JSON walk ------------------------------------------------------ */

/* The plugin reads a handful of members of stdin, at the places where the agent reads them
 * (NetConf.parse), and nothing from anywhere else: a pod can put whatever it likes into `args`
 * (Multus' cni-args) or `runtimeConfig`, and a runtime copies a previous plugin's output into
 * `prevResult`. So stdin is walked as JSON, structure and all, rather than searched: a key is only
 * a key at the depth and in the object where the walk finds it. The walk checks the grammar
 * (RFC 8259) but not the UTF-8 encoding (the agent judges that); it keeps no copies, recurses at
 * most JSON_MAX_DEPTH deep and never converts a number. */

/* A member as found: `raw` and `len` are a string's contents, still escaped. */
struct member {
    int found, is_string;
    const char *raw;
    size_t len;
};

/* Top level: cniVersion, type, agentSocket, ipam; inside the top-level ipam object: type and
 * agentSocket. */
struct netconf {
    struct member version, type, socket, ipam, ipam_type, ipam_socket;
};

/* Where an object sits: its members are looked up only at the first two. */
enum place { PLACE_ROOT, PLACE_IPAM, PLACE_OTHER };

struct walk {
    const char *p, *end;
    struct netconf *nc;
};

static int is_json_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

static void skip_space(struct walk *w)
{
    while (w->p < w->end && is_json_space(*w->p))
        w->p++;
}

/* Whether a string's raw contents, escapes decoded, are the ASCII text `lit`: the agent compares
 * decoded strings, so "cad\u0061stre" is the type cadastre and "agent\u0053ocket" the key. Only
 * call it on contents walk_string accepted (every escape complete). */
static int json_equals(const char *raw, size_t n, const char *lit)
{
    static const char plain[] = "\"\\/bfnrt", decoded[] = "\"\\/\b\f\n\r\t";
    size_t i = 0;
    for (; i < n && *lit != '\0'; lit++) {
        long c = (unsigned char)raw[i++];
        if (c == '\\') {
            char e = raw[i++];
            if (e == 'u') {
                c = 0;
                for (int k = 0; k < 4; k++)
                    c = c << 4 | hex_value(raw[i++]);
            } else {
                c = (unsigned char)decoded[(const char *)memchr(plain, e, sizeof plain - 1) - plain];
            }
        }
        if (c != (unsigned char)*lit)
            return 0;
    }
    return i == n && *lit == '\0';
}

/* At the opening quote. Returns 0 with the contents in *raw, *len, or -1: unterminated, a raw
 * control character, or a bad escape. */
static int walk_string(struct walk *w, const char **raw, size_t *len)
{
    const char *p = ++w->p, *end = w->end;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            *raw = w->p;
            *len = (size_t)(p - w->p);
            w->p = p + 1;
            return 0;
        }
        if (c < 0x20)
            return -1;
        if (c != '\\') {
            p++;
            continue;
        }
        if (end - p < 2)
            return -1;
        if (p[1] == 'u') {
            if (end - p < 6)
                return -1;
            for (int k = 2; k < 6; k++)
                if (hex_value(p[k]) < 0)
                    return -1;
            p += 6;
        } else if (memchr("\"\\/bfnrt", p[1], 8) != NULL) { /* memchr: p[1] may be NUL */
            p += 2;
        } else {
            return -1;
        }
    }
    return -1;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, however long: it is only skipped. */
static int walk_number(struct walk *w)
{
    const char *p = w->p, *end = w->end;
    if (p < end && *p == '-')
        p++;
    if (p == end || !is_digit(*p))
        return -1;
    if (*p == '0')
        p++;
    else
        while (p < end && is_digit(*p))
            p++;
    if (p < end && *p == '.') {
        if (++p == end || !is_digit(*p))
            return -1;
        while (p < end && is_digit(*p))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        if (++p < end && (*p == '+' || *p == '-'))
            p++;
        if (p == end || !is_digit(*p))
            return -1;
        while (p < end && is_digit(*p))
            p++;
    }
    w->p = p;
    return 0;
}

static int walk_literal(struct walk *w, const char *lit)
{
    size_t k = strlen(lit);
    if ((size_t)(w->end - w->p) < k || memcmp(w->p, lit, k) != 0)
        return -1;
    w->p += k;
    return 0;
}

/* The member of `place` named by the key, if the plugin reads it. */
static struct member *member_at(struct netconf *nc, enum place place, const char *key, size_t n)
{
    if (place == PLACE_ROOT) {
        if (json_equals(key, n, "cniVersion"))
            return &nc->version;
        if (json_equals(key, n, "type"))
            return &nc->type;
        if (json_equals(key, n, "agentSocket"))
            return &nc->socket;
        if (json_equals(key, n, "ipam"))
            return &nc->ipam;
    } else if (place == PLACE_IPAM) {
        if (json_equals(key, n, "type"))
            return &nc->ipam_type;
        if (json_equals(key, n, "agentSocket"))
            return &nc->ipam_socket;
    }
    return NULL;
}

static int walk_value(struct walk *w, int depth, enum place place, struct member *m);

/* At a container's opening bracket: steps over it, and returns 1 (past `close` too) if the
 * container is empty. */
static int walk_open(struct walk *w, char close)
{
    w->p++;
    skip_space(w);
    if (w->p < w->end && *w->p == close) {
        w->p++;
        return 1;
    }
    return 0;
}

/* After a member or an element: 0 past a comma (another follows), 1 past `close`, else -1. */
static int walk_separator(struct walk *w, char close)
{
    skip_space(w);
    if (w->p == w->end)
        return -1;
    char c = *w->p++;
    return c == ',' ? 0 : c == close ? 1 : -1;
}

/* At the opening brace; `depth` counts the containers around the members, this one included. */
static int walk_object(struct walk *w, int depth, enum place place)
{
    int sep;
    if (walk_open(w, '}'))
        return 0;
    do {
        const char *key;
        size_t n;
        skip_space(w);
        if (w->p == w->end || *w->p != '"' || walk_string(w, &key, &n) != 0)
            return -1;
        skip_space(w);
        if (w->p == w->end || *w->p != ':')
            return -1;
        w->p++;
        struct member *m = member_at(w->nc, place, key, n);
        if (walk_value(w, depth, m == &w->nc->ipam ? PLACE_IPAM : PLACE_OTHER, m) != 0)
            return -1;
    } while ((sep = walk_separator(w, '}')) == 0);
    return sep > 0 ? 0 : -1;
}

static int walk_array(struct walk *w, int depth)
{
    int sep;
    if (walk_open(w, ']'))
        return 0;
    do {
        if (walk_value(w, depth, PLACE_OTHER, NULL) != 0)
            return -1;
    } while ((sep = walk_separator(w, ']')) == 0);
    return sep > 0 ? 0 : -1;
}

/* One value inside `depth` containers; `place` applies if it is an object, and `m` (if not NULL)
 * records it. A member met twice is malformed here: the agent refuses duplicate keys too. */
static int walk_value(struct walk *w, int depth, enum place place, struct member *m)
{
    skip_space(w);
    if (w->p == w->end)
        return -1;
    if (m != NULL) {
        if (m->found)
            return -1;
        m->found = 1;
    }
    switch (*w->p) {
    case '{':
        return depth < JSON_MAX_DEPTH ? walk_object(w, depth + 1, place) : -1;
    case '[':
        return depth < JSON_MAX_DEPTH ? walk_array(w, depth + 1) : -1;
    case '"': {
        const char *raw;
        size_t n;
        if (walk_string(w, &raw, &n) != 0)
            return -1;
        if (m != NULL) {
            m->is_string = 1;
            m->raw = raw;
            m->len = n;
        }
        return 0;
    }
    case 't':
        return walk_literal(w, "true");
    case 'f':
        return walk_literal(w, "false");
    case 'n':
        return walk_literal(w, "null");
    default:
        return walk_number(w);
    }
}

/* Fills *nc from stdin. Returns -1, with *nc emptied, if stdin is not one JSON value (with
 * whitespace around it) or repeats a member the plugin reads: nothing is taken from a document
 * that could not be walked, and the agent gives its verdict on it. */
static int walk_netconf(const char *buf, size_t n, struct netconf *nc)
{
    struct walk w = {.p = buf, .end = buf + n, .nc = nc};
    memset(nc, 0, sizeof *nc);
    if (walk_value(&w, 0, PLACE_ROOT, NULL) == 0) {
        skip_space(&w);
        if (w.p == w.end)
            return 0;
    }
    memset(nc, 0, sizeof *nc);
    return -1;
}

/* The agentSocket of the role the agent will see (NetConf.parse): the top level's when type is
 * cadastre, else the ipam section's when ipam.type is cadastre-ipam; NULL when neither, or when
 * it is absent or not a string (null means absent; another type the agent refuses). */
static const struct member *netconf_socket(const struct netconf *nc)
{
    const struct member *m = NULL;
    if (nc->type.is_string && json_equals(nc->type.raw, nc->type.len, "cadastre"))
        m = &nc->socket;
    else if (nc->ipam_type.is_string && json_equals(nc->ipam_type.raw, nc->ipam_type.len, "cadastre-ipam"))
        m = &nc->ipam_socket;
    return m != NULL && m->is_string ? m : NULL;
}

/* ---- the request ------------------------------------------------------------------------- */

/* The CNI variables, forwarded as headers in this order. */
static const struct cni_var {
    const char *env, *header;
    size_t max; /* bytes */
} cni_vars[] = {
    {"CNI_COMMAND", "CNI-Command", CNI_COMMAND_MAX},
    {"CNI_CONTAINERID", "CNI-ContainerID", CNI_CONTAINERID_MAX},
    {"CNI_NETNS", "CNI-Netns", CNI_NETNS_MAX},
    {"CNI_IFNAME", "CNI-Ifname", CNI_IFNAME_MAX},
    {"CNI_ARGS", "CNI-Args", CNI_ARGS_MAX},
    {"CNI_PATH", "CNI-Path", CNI_PATH_MAX},
};

/* Refuses a variable over its limit here, with nothing sent: the agent would refuse it too, but
 * possibly mid-request. The value is not quoted: CNI_ARGS may carry credentials. Returns 0, or
 * the exit status after printing the error. */
static int check_cni_vars(void)
{
    for (size_t i = 0; i < sizeof cni_vars / sizeof cni_vars[0]; i++) {
        const char *v = getenv(cni_vars[i].env);
        size_t n = v == NULL ? 0 : strlen(v);
        if (n > cni_vars[i].max) {
            char msg[64];
            snprintf(msg, sizeof msg, "invalid environment variable %s", cni_vars[i].env);
            return fail(4, msg, "%s is %zu bytes long: at most %zu bytes are accepted",
                        cni_vars[i].env, n, cni_vars[i].max);
        }
    }
    return 0;
}

/* Header values are percent-encoded so that any env value (spaces, CR/LF, UTF-8) survives as a
 * legal HTTP field value; the agent decodes them. Unset variables send no header at all, which
 * lets the agent tell "unset" from "empty". */
static void put_cni_header(struct out *o, const struct cni_var *var)
{
    static const char hex[] = "0123456789ABCDEF";
    const char *v = getenv(var->env);
    if (v == NULL)
        return;
    out_str(o, var->header);
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

/* Returns 0, or -1 with errno set. */
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
    for (size_t i = 0; i < sizeof cni_vars / sizeof cni_vars[0]; i++)
        put_cni_header(&o, &cni_vars[i]);
    out_put(&o, "\r\n", 2);
    out_put(&o, in, body_len);
    /* No shutdown(SHUT_WR) after the body: a server that does not support half-close may drop
     * the connection, and the reply with it. "Connection: close" is what ends the exchange. */
    if (out_flush(&o) == 0)
        return 0;
    errno = o.err;
    return -1;
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
 * reply (which cni-bridge/DESIGN.md makes code 11); PARSE_BAD that it is not an HTTP/1.x reply
 * we accept, with *why saying how. */
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

/* The agent's socket and where it was named: a bad name in the environment is that variable's
 * fault (code 4), one in stdin the netconf's (code 7). */
struct agent {
    const char *origin; /* "agentSocket", "CADASTRE_AGENT_SOCKET" or "the default socket" */
    char path[SUN_PATH_MAX + 1];
};

/* NULL if `path` is absolute and has no ".", ".." or empty component (so that its last component
 * names the socket and its parent is the directory that holds it), else the rule it breaks. */
static const char *path_rule(const char *path)
{
    if (path[0] != '/')
        return "must be an absolute path";
    for (const char *c = path + 1;; c++) {
        const char *e = strchr(c, '/');
        size_t k = e == NULL ? strlen(c) : (size_t)(e - c);
        if (k == 0 || (k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
            return "must not have '.', '..' or empty components";
        if (e == NULL)
            return NULL;
        c = e;
    }
}

/* Fills *a from, in order: the netconf's agentSocket (netconf_socket), $CADASTRE_AGENT_SOCKET,
 * the default; checks the name's form. Returns 0, or the exit status after printing the error. */
static int agent_address(struct agent *a, const struct netconf *nc)
{
    const struct member *m = netconf_socket(nc);
    const char *env = getenv("CADASTRE_AGENT_SOCKET");
    const char *rule;
    if (m != NULL) {
        a->origin = "agentSocket";
        /* Escapes are not decoded: a path needing them is refused rather than misread. */
        if (memchr(m->raw, '\\', m->len) != NULL)
            return fail(7, "invalid network config", "agentSocket must be a plain string without escapes");
        if (m->len == 0 || m->len > SUN_PATH_MAX)
            return fail(7, "invalid network config", "agentSocket must be 1 to %zu bytes long", SUN_PATH_MAX);
        memcpy(a->path, m->raw, m->len);
        a->path[m->len] = '\0';
        if ((rule = path_rule(a->path)) != NULL)
            return fail(7, "invalid network config", "agentSocket %s %s", a->path, rule);
    } else if (env != NULL && env[0] != '\0') {
        a->origin = "CADASTRE_AGENT_SOCKET";
        if (strlen(env) > SUN_PATH_MAX)
            return fail(4, "invalid environment variable CADASTRE_AGENT_SOCKET",
                        "the socket path must be at most %zu bytes long", SUN_PATH_MAX);
        strcpy(a->path, env);
        if ((rule = path_rule(a->path)) != NULL)
            return fail(4, "invalid environment variable CADASTRE_AGENT_SOCKET",
                        "CADASTRE_AGENT_SOCKET %s %s", a->path, rule);
    } else {
        a->origin = "the default socket";
        strcpy(a->path, DEFAULT_SOCKET);
    }
    return 0;
}

/* A failed open or lstat on the way to the socket (`what` says which, e.g. "lstat"). Only "not
 * there" is worth retrying: the agent creates the directory and the socket when it starts. */
static int path_error(const struct agent *a, const char *what, int e)
{
    int code = e == ENOENT ? 11 : e == ENOTDIR || e == ELOOP || e == EACCES || e == ENAMETOOLONG ? 7 : 11;
    return fail(code, code == 7 ? "invalid network config" : "cadastre agent unreachable",
                "%s %s: %s: %s", a->origin, a->path, what, strerror(e));
}

/* Connects to the agent, but only through a socket that no other uid can have put in place: the
 * socket and its directory must belong to our effective uid (root, as runtimes run plugins), and
 * the directory must not be writable by group or others. This holds even against a
 * NetworkAttachmentDefinition's author, who chooses agentSocket. The directory is opened once,
 * checked, and the socket reached through it (fchdir, then its relative name), so that a
 * directory swapped in after the checks is never used. Returns 0 with the connected socket in
 * *fd, or the exit status after printing the error. */
static int connect_agent(const struct agent *a, int *fd)
{
    char dir[SUN_PATH_MAX + 1];
    const char *base = strrchr(a->path, '/') + 1; /* path_rule: absolute, last component not empty */
    size_t dn = base - a->path > 1 ? (size_t)(base - a->path) - 1 : 1; /* "/sock" lives in "/" */
    memcpy(dir, a->path, dn);
    dir[dn] = '\0';

    unsigned uid = (unsigned)geteuid();
    struct stat st;
    char what[SUN_PATH_MAX + 32];
    snprintf(what, sizeof what, "open its directory %s", dir);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return path_error(a, what, errno);
    if (fstat(dfd, &st) != 0) {
        int e = errno;
        close(dfd);
        return path_error(a, "fstat its directory", e);
    }
    if ((unsigned)st.st_uid != uid) {
        close(dfd);
        return fail(7, "invalid network config", "%s %s: its directory %s is owned by uid %u, not %u (the plugin's)",
                    a->origin, a->path, dir, (unsigned)st.st_uid, uid);
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        close(dfd);
        return fail(7, "invalid network config", "%s %s: its directory %s is writable by group or others (mode %04o)",
                    a->origin, a->path, dir, (unsigned)(st.st_mode & 07777));
    }
    if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        int e = errno;
        close(dfd);
        return path_error(a, "lstat", e);
    }
    if (!S_ISSOCK(st.st_mode)) {
        close(dfd);
        return fail(7, "invalid network config", "%s %s is not a socket (lstat)", a->origin, a->path);
    }
    if ((unsigned)st.st_uid != uid) {
        close(dfd);
        return fail(7, "invalid network config", "%s %s is owned by uid %u, not %u (the plugin's)",
                    a->origin, a->path, (unsigned)st.st_uid, uid);
    }
    int e = fchdir(dfd) != 0 ? errno : 0;
    close(dfd);
    if (e != 0)
        return fail(11, "cadastre agent unreachable", "%s %s: fchdir: %s", a->origin, a->path, strerror(e));

    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, base, strlen(base));
    if ((*fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0)
        return fail(11, "cadastre agent unreachable", "socket: %s", strerror(errno));
    /* SO_SNDTIMEO also bounds connect() on a Unix socket whose listen backlog is full. */
    struct timeval snd = {.tv_sec = SEND_TIMEOUT_S}, rcv = {.tv_sec = RECV_TIMEOUT_S};
    if (setsockopt(*fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd) != 0
        || setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &rcv, sizeof rcv) != 0) {
        e = errno;
        close(*fd);
        return fail(11, "cadastre agent unreachable", "setsockopt: %s", strerror(e));
    }
    /* An interrupted Unix connect has not connected yet, so retrying it is safe. */
    while (connect(*fd, (const struct sockaddr *)&sa, sizeof sa) != 0) {
        if (errno == EINTR)
            continue;
        e = errno;
        close(*fd);
        return fail(11, "cadastre agent unreachable", "connect %s: %s", a->path, socket_error(e));
    }
    return 0;
}

int main(void)
{
    size_t in_len;
    /* stdin first, so that every answer, errors included, can echo the caller's cniVersion. */
    int read_err = read_bounded(STDIN_FILENO, in, sizeof in, &in_len) != 0 ? errno : 0;
    struct netconf nc;
    walk_netconf(in, in_len, &nc); /* on failure nc is empty: the defaults apply */
    if (nc.version.is_string && is_version(nc.version.raw, nc.version.len)) {
        version = nc.version.raw;
        version_len = nc.version.len;
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

    struct agent a;
    int fd = -1;
    int rc = check_cni_vars();
    if (rc == 0)
        rc = agent_address(&a, &nc);
    if (rc == 0)
        rc = connect_agent(&a, &fd);
    if (rc != 0)
        return rc;
    const char *sp = a.path;

    /* A send that fails because the agent closed (EPIPE, or ECONNRESET) may mean that it answered
     * before reading the whole request, a limit of its own refusing it: that reply is waiting to
     * be read, and it is the answer. */
    int send_err = send_request(fd, in_len) != 0 ? errno : 0;
    if (send_err != 0 && send_err != EPIPE && send_err != ECONNRESET) {
        close(fd);
        return fail(11, "cadastre agent unreachable", "send to %s: %s", sp, socket_error(send_err));
    }
    size_t n;
    int recv_err = read_bounded(fd, reply, sizeof reply, &n) != 0 ? errno : 0;
    close(fd);
    /* On a Unix socket a reset only says that the agent closed with part of our request unread:
     * every byte it wrote before closing is still delivered, so the reset ends the reply as EOF
     * does. */
    if (recv_err == ECONNRESET)
        recv_err = 0;
    if (recv_err != 0)
        return fail(11, "cadastre agent unreachable", "read from %s: %s", sp, socket_error(recv_err));
    if (n > REPLY_MAX)
        return fail(5, "bad reply from the cadastre agent", "reply larger than %zu bytes", REPLY_MAX);

    int status = 0;
    char *body = NULL;
    size_t body_len = 0;
    const char *why;
    switch (parse_reply(reply, n, &status, &body, &body_len, &why)) {
    case PARSE_SHORT:
        if (send_err != 0)
            return fail(11, "cadastre agent unreachable", "send to %s: %s", sp, socket_error(send_err));
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
