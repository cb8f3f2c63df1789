#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <microhttpd.h>

// MHD_start_daemon and MHD_get_*_info are variadic, which Swift cannot call;
// these wrappers take plain arguments instead.

/// Everything `cmhd_start_daemon` passes to MHD_start_daemon.
typedef struct cmhd_daemon_config {
    unsigned int flags;
    /// The address to listen on (IPv4 or IPv6, port included).
    const struct sockaddr *address;
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    unsigned int connection_timeout_seconds;
    size_t connection_memory_limit;
    /// PEM text, or NULL for plain HTTP.
    const char *tls_key_pem;
    const char *tls_cert_pem;
    MHD_AccessHandlerCallback handler;
    void *handler_context;
    MHD_RequestCompletedCallback completed;
    void *completed_context;
} cmhd_daemon_config;

static inline struct MHD_Daemon *cmhd_start_daemon(const cmhd_daemon_config *config) {
    struct MHD_OptionItem options[10];
    int count = 0;
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)config->address};
    if (config->thread_pool_size > 1) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)config->thread_pool_size, NULL};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)config->connection_limit, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)config->connection_timeout_seconds, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)config->connection_memory_limit, NULL};
    if (config->tls_key_pem != NULL && config->tls_cert_pem != NULL) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)config->tls_key_pem};
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)config->tls_cert_pem};
        // TLS 1.2 at least: 1.0 and 1.1 have known weaknesses (RFC 8996).
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0,
                                                   (void *)"NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    uint16_t port = 0;
    if (config->address->sa_family == AF_INET) {
        port = ntohs(((const struct sockaddr_in *)config->address)->sin_port);
    } else if (config->address->sa_family == AF_INET6) {
        port = ntohs(((const struct sockaddr_in6 *)config->address)->sin6_port);
    }
    return MHD_start_daemon(config->flags, port, NULL, NULL,
                            config->handler, config->handler_context,
                            MHD_OPTION_NOTIFY_COMPLETED, config->completed, config->completed_context,
                            MHD_OPTION_ARRAY, options,
                            MHD_OPTION_END);
}

/// The port the daemon listens on (useful after binding port 0), or 0.
static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The peer address of a connection, or NULL.
static inline const struct sockaddr *cmhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}
#endif
