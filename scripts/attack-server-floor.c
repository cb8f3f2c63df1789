// floorhttpd: an HTTP server that does as little as a server can, so that
// scripts/attack-server can time what libmicrohttpd and the machine cost
// under each attack (the "floor" rows), next to `notesfs serve`.
//
// It runs libmicrohttpd exactly as notesfs serve does by default
// (Sources/HTTPServer, Sources/CMicroHTTPD/shim.h): two poll(2) worker
// threads, suspend/resume allowed, 4,000 connections, 256 per address, 60 s
// idle timeout, 64 KiB per connection, strict HTTP. A request whose
// Authorization is not exactly `Bearer TOKEN` gets one shared, preallocated
// 401 with `Connection: close`, queued from the first callback (the body is
// never read); the token's requests get 200 `{}` after their body is read
// and dropped. Nothing is logged, not even libmicrohttpd's messages.
//
// Built on demand by scripts/attack-server:
//   cc -O2 -o floorhttpd scripts/attack-server-floor.c $(pkg-config --cflags --libs libmicrohttpd)
// Usage: floorhttpd TOKEN-FILE   (listens on 127.0.0.1, a free port; prints
//        "listening on http://127.0.0.1:PORT" to standard error; SIGTERM stops it)
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

static char expected_authorization[256];
static struct MHD_Response *unauthorized;
static struct MHD_Response *ok;
// Marks a request of the token's that is reading its body (its con_cls).
static int reading_body;

static void ignore_message(void *cls, const char *format, va_list arguments) {
    (void)cls;
    (void)format;
    (void)arguments;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **con_cls) {
    (void)cls;
    (void)url;
    (void)method;
    (void)version;
    (void)upload_data;
    if (*con_cls == NULL) {
        const char *authorization = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Authorization");
        if (authorization == NULL || strcmp(authorization, expected_authorization) != 0) {
            return MHD_queue_response(connection, MHD_HTTP_UNAUTHORIZED, unauthorized);
        }
        *con_cls = &reading_body;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    return MHD_queue_response(connection, MHD_HTTP_OK, ok);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: floorhttpd TOKEN-FILE\n");
        return 2;
    }
    FILE *file = fopen(argv[1], "r");
    char token[200] = {0};
    if (file == NULL || fgets(token, sizeof token, file) == NULL) {
        fprintf(stderr, "floorhttpd: cannot read %s\n", argv[1]);
        return 1;
    }
    fclose(file);
    token[strcspn(token, "\r\n")] = 0;
    snprintf(expected_authorization, sizeof expected_authorization, "Bearer %s", token);

    static const char unauthorized_body[] = "{\"error\":\"unauthorized\",\"message\":\"a valid bearer token is needed\"}";
    unauthorized = MHD_create_response_from_buffer(strlen(unauthorized_body), (void *)unauthorized_body,
                                                   MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(unauthorized, "Content-Type", "application/json");
    MHD_add_response_header(unauthorized, "Connection", "close");
    ok = MHD_create_response_from_buffer(2, (void *)"{}", MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(ok, "Content-Type", "application/json");

    // Blocked before libmicrohttpd starts its threads, so sigwait below takes them.
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigprocmask(SIG_BLOCK, &stop, NULL);
    struct sockaddr_in address = {0};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_POLL | MHD_USE_ERROR_LOG;
    struct MHD_Daemon *daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, answer, NULL,
        MHD_OPTION_EXTERNAL_LOGGER, ignore_message, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&address,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)2,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned int)4000,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(64 * 1024),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)256,
        MHD_OPTION_STRICT_FOR_CLIENT, (int)1,
        MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "floorhttpd: libmicrohttpd did not start\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "floorhttpd: listening on http://127.0.0.1:%u (pid %d)\n", info == NULL ? 0u : info->port,
            (int)getpid());

    int received = 0;
    sigwait(&stop, &received);
    MHD_stop_daemon(daemon);
    MHD_destroy_response(unauthorized);
    MHD_destroy_response(ok);
    return 0;
}
