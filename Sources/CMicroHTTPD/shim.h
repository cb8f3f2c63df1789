#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <stdio.h>
#include <microhttpd.h>

// MHD_start_daemon and MHD_get_*_info are variadic, which Swift cannot call;
// these wrappers take plain arguments instead.

struct cmhd_message_sink;

/// Everything `cmhd_start_daemon` passes to MHD_start_daemon.
typedef struct cmhd_daemon_config {
    unsigned int flags;
    /// The address to listen on (IPv4 or IPv6, port included).
    const struct sockaddr *address;
    unsigned int thread_pool_size;
    unsigned int connection_limit;
    /// Open connections per client address at most (0: no limit).
    unsigned int per_address_connection_limit;
    unsigned int connection_timeout_seconds;
    size_t connection_memory_limit;
    /// PEM text, or NULL for plain HTTP.
    const char *tls_key_pem;
    const char *tls_cert_pem;
    MHD_AccessHandlerCallback handler;
    void *handler_context;
    MHD_RequestCompletedCallback completed;
    void *completed_context;
    /// Called with the raw request target before libmicrohttpd parses its
    /// query; its result becomes the request's `con_cls`.
    void *(*uri_logger)(void *context, const char *uri, struct MHD_Connection *connection);
    void *uri_logger_context;
    /// Called when a connection opens and closes (header deadlines).
    MHD_NotifyConnectionCallback connection_notify;
    void *connection_notify_context;
    /// Decides at accept, from the client's address alone, whether a new
    /// connection is served (MHD_YES) or closed at once (NULL: all are served).
    MHD_AcceptPolicyCallback accept_policy;
    void *accept_policy_context;
    /// Receives libmicrohttpd's own messages (NULL: they go to stderr as is).
    const struct cmhd_message_sink *message_sink;
} cmhd_daemon_config;

/// Where libmicrohttpd's messages go, already formatted. The caller keeps it
/// alive for the daemon's life.
typedef struct cmhd_message_sink {
    void (*log)(void *context, const char *message);
    void *context;
} cmhd_message_sink;

static inline void cmhd_format_message(void *context, const char *format, va_list arguments) {
    const cmhd_message_sink *sink = (const cmhd_message_sink *)context;
    char buffer[512];
    vsnprintf(buffer, sizeof buffer, format, arguments);
    sink->log(sink->context, buffer);
}

static inline struct MHD_Daemon *cmhd_start_daemon(const cmhd_daemon_config *config) {
    struct MHD_OptionItem options[16];
    int count = 0;
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_SOCK_ADDR, 0, (void *)config->address};
    if (config->thread_pool_size > 1) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)config->thread_pool_size, NULL};
    }
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_LIMIT, (intptr_t)config->connection_limit, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)config->connection_timeout_seconds, NULL};
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)config->connection_memory_limit, NULL};
    if (config->per_address_connection_limit > 0) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)config->per_address_connection_limit, NULL};
    }
    // HTTP/1.1 without Host, and spaces inside the request target, get 400.
    options[count++] = (struct MHD_OptionItem){MHD_OPTION_STRICT_FOR_CLIENT, 1, NULL};
    if (config->uri_logger != NULL) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)config->uri_logger, config->uri_logger_context};
    }
    if (config->connection_notify != NULL) {
        options[count++] = (struct MHD_OptionItem){MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)config->connection_notify, config->connection_notify_context};
    }
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
    // libmicrohttpd wants its logger as the very first option.
    if (config->message_sink != NULL) {
        return MHD_start_daemon(config->flags, port, config->accept_policy, config->accept_policy_context,
                                config->handler, config->handler_context,
                                MHD_OPTION_EXTERNAL_LOGGER, cmhd_format_message, (void *)config->message_sink,
                                MHD_OPTION_ARRAY, options,
                                MHD_OPTION_NOTIFY_COMPLETED, config->completed, config->completed_context,
                                MHD_OPTION_END);
    }
    return MHD_start_daemon(config->flags, port, config->accept_policy, config->accept_policy_context,
                            config->handler, config->handler_context,
                            MHD_OPTION_ARRAY, options,
                            MHD_OPTION_NOTIFY_COMPLETED, config->completed, config->completed_context,
                            MHD_OPTION_END);
}

/// The port the daemon listens on (useful after binding port 0), or 0.
static inline uint16_t cmhd_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

/// The socket of a connection, or -1.
static inline int cmhd_connection_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

/// Sets a connection's idle timeout (0: none).
static inline void cmhd_set_connection_timeout(struct MHD_Connection *connection, unsigned int seconds) {
    MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, seconds);
}

/// The peer address of a connection, or NULL.
static inline const struct sockaddr *cmhd_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}
#endif
