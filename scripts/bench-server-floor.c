// floorsyncd: an HTTP server that only parses the load generator's requests
// and answers each with a fixed reply, so that scripts/bench-server can time
// what HTTP alone costs on this machine (the "floor"), next to `notesfs serve`.
//
// It runs libmicrohttpd as `notesfs serve` does under the benchmark
// (Sources/HTTPServer, Sources/CMicroHTTPD/shim.h, and the script's
// `--max-connections-per-address 4000`): two poll(2) worker threads,
// suspend/resume allowed, 4,000 connections, 4,000 per address, 60 s idle
// timeout, 16 KiB per connection, strict HTTP. Every request must carry a
// bearer token (any token: there is no store to check it against). A push
// (any POST) has its body read and dropped, then gets one shared,
// preallocated 200 with a valid push answer: one change applied at version 1.
// `GET /metrics` gets the one metric the load generator reads
// (`notesfs_long_polls_held 0`); any other GET gets an empty page of
// changes. The load generator counts these answers as it counts serve's, so
// its "applied" is the floor's pushes and the pull after every tenth.
// Nothing is logged, not even libmicrohttpd's messages.
//
// Built on demand by scripts/bench-server:
//   cc -O2 -o floorsyncd scripts/bench-server-floor.c $(pkg-config --cflags --libs libmicrohttpd)
// Usage: floorsyncd   (listens on 127.0.0.1, a free port; prints
//        "listening on http://127.0.0.1:PORT" to standard error; SIGTERM stops it)
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>

static struct MHD_Response *unauthorized;
static struct MHD_Response *pushed;
static struct MHD_Response *empty_page;
static struct MHD_Response *metrics;

static void ignore_message(void *cls, const char *format, va_list arguments) {
    (void)cls;
    (void)format;
    (void)arguments;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size,
                              void **con_cls) {
    (void)cls;
    (void)version;
    (void)upload_data;
    // The first call has the head; the answer is chosen then (the request's
    // con_cls) and queued once the body is read, as serve does: a reply
    // queued from the first call would make libmicrohttpd close the
    // connection after it.
    if (*con_cls == NULL) {
        if (strcmp(method, "GET") == 0 && strcmp(url, "/metrics") == 0) {
            *con_cls = metrics;
            return MHD_YES;
        }
        const char *authorization = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, "Authorization");
        if (authorization == NULL || strncmp(authorization, "Bearer ", 7) != 0 || authorization[7] == 0) {
            return MHD_queue_response(connection, MHD_HTTP_UNAUTHORIZED, unauthorized);
        }
        *con_cls = strcmp(method, "POST") == 0 ? pushed : empty_page;
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    return MHD_queue_response(connection, MHD_HTTP_OK, (struct MHD_Response *)*con_cls);
}

static struct MHD_Response *json_response(const char *body) {
    struct MHD_Response *response =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(response, "Content-Type", "application/json");
    return response;
}

int main(int argc, char **argv) {
    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: floorsyncd\n");
        return 2;
    }
    unauthorized = json_response("{\"error\":\"unauthorized\",\"message\":\"a valid bearer token is needed\"}");
    MHD_add_response_header(unauthorized, "Connection", "close");
    pushed = json_response(
        "{\"results\":[{\"changeId\":\"00000000-0000-7000-8000-000000000001\",\"status\":\"applied\",\"version\":1}]}");
    empty_page = json_response("{\"changes\":[],\"epoch\":\"floor\",\"hasMore\":false,\"nextCursor\":\"floor.0\"}");
    static const char metrics_text[] = "notesfs_long_polls_held 0\n";
    metrics = MHD_create_response_from_buffer(strlen(metrics_text), (void *)metrics_text, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(metrics, "Content-Type", "text/plain");

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
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(16 * 1024),
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned int)4000,
        MHD_OPTION_STRICT_FOR_CLIENT, (int)1,
        MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "floorsyncd: libmicrohttpd did not start\n");
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "floorsyncd: listening on http://127.0.0.1:%u (pid %d)\n", info == NULL ? 0u : info->port,
            (int)getpid());

    int received = 0;
    sigwait(&stop, &received);
    MHD_stop_daemon(daemon);
    MHD_destroy_response(unauthorized);
    MHD_destroy_response(pushed);
    MHD_destroy_response(empty_page);
    MHD_destroy_response(metrics);
    return 0;
}
