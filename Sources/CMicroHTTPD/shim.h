#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* The content reader's two ways to end a response: with the terminating
   chunk, or by closing the connection without it (the client sees the
   body cut off). The macros are casts, which Swift does not import. */
static const ssize_t peersync_http_end_of_stream = MHD_CONTENT_READER_END_OF_STREAM;
static const ssize_t peersync_http_end_with_error = MHD_CONTENT_READER_END_WITH_ERROR;
static const uint64_t peersync_http_size_unknown = MHD_SIZE_UNKNOWN;

/* Told the status of every error response libmicrohttpd sends by itself
   (400 for a malformed request line or header, 431, 414, 505…), which
   never reach the access handler; and told of the connection whose
   `Content-Length` it refuses, so that the server answers it instead (see
   peersync_http_log). `last_request` is the connection whose request line
   libmicrohttpd read last, or NULL once it closed. */
typedef struct {
    void (*status)(void *context, unsigned int status);
    void (*unreadable_length)(void *context, struct MHD_Connection *connection);
    void *context;
    struct MHD_Connection *last_request;
} peersync_http_error_hook;

/* libmicrohttpd 0.9.75 has no callback for its own error responses, but
   it logs each one through one message, "Error processing request (HTTP
   response code is %u ('%s')). Closing connection.", whose first argument
   is the status.

   Its refusal of a `Content-Length` that is not a number or does not fit
   64 bits (400, 413) comes with the header block twice: it builds the
   header as it refuses, then once more as the request goes on to the
   reply. It logs why just before, while parsing that request's headers,
   on the polling thread that read its request line last, unless another
   connection's came in between (the request head split across reads). So
   `last_request` is handed over, and the server checks that its
   `Content-Length` is indeed unreadable before it answers on its socket.
   Every other message is dropped (it would go to stderr). */
static inline void peersync_http_log(void *context, const char *format, va_list arguments) {
    static const char prefix[] = "Error processing request (HTTP response code is %u";
    static const char malformed[] = "Failed to parse `Content-Length' header.";
    static const char too_large[] = "Too large value of 'Content-Length' header.";
    peersync_http_error_hook *hook = (peersync_http_error_hook *)context;
    if (hook == NULL || format == NULL) return;
    if (strncmp(format, prefix, sizeof prefix - 1) == 0) {
        hook->status(hook->context, va_arg(arguments, unsigned int));
    } else if ((strncmp(format, malformed, sizeof malformed - 1) == 0 ||
                strncmp(format, too_large, sizeof too_large - 1) == 0) &&
               hook->last_request != NULL) {
        hook->unreadable_length(hook->context, hook->last_request);
    }
}

/* Called as a request line is read (MHD_OPTION_URI_LOG_CALLBACK); NULL
   leaves the request's own pointer unset for the access handler. */
static inline void *peersync_http_request_line(void *context, const char *uri, struct MHD_Connection *connection) {
    (void)uri;
    ((peersync_http_error_hook *)context)->last_request = connection;
    return NULL;
}

/* Forgets a connection that closes (MHD_OPTION_NOTIFY_CONNECTION). */
static inline void peersync_http_connection_event(
    void *context, struct MHD_Connection *connection, void **socket_context,
    enum MHD_ConnectionNotificationCode code) {
    (void)socket_context;
    peersync_http_error_hook *hook = (peersync_http_error_hook *)context;
    if (code == MHD_CONNECTION_NOTIFY_CLOSED && hook->last_request == connection) hook->last_request = NULL;
}

/* MHD_start_daemon is variadic, which Swift cannot call: this fixes the
   options PeerSync uses. `listen_fd` is a bound, listening socket that MHD
   then owns (it closes it on stop).

   One internal thread polls every connection with epoll; handlers never
   run on it. The access handler suspends a connection while a worker of
   the server's own computes its response, and a streamed response's
   connection while the stream has nothing to send, so the polling thread
   never blocks (MHD_ALLOW_SUSPEND_RESUME); it only moves bytes, so one is
   enough for a loopback API and there is no MHD_OPTION_THREAD_POOL_SIZE
   (whose threads would split the connection limit between them).

   A suspended connection does not time out; `timeout_seconds` cuts one
   that sends and receives nothing for that long. No
   MHD_OPTION_PER_IP_CONNECTION_LIMIT: every client of this loopback API
   comes from 127.0.0.1, so a per-IP limit is the connection limit again,
   and one misbehaving local app reaching it would lock out the CLI and
   every other app as well. */
static inline struct MHD_Daemon *peersync_http_start(
    int listen_fd, int ipv6, unsigned int connection_limit, unsigned int timeout_seconds,
    size_t memory_limit, MHD_AccessHandlerCallback handler, void *handler_context,
    MHD_RequestCompletedCallback completed, void *completed_context, peersync_http_error_hook *errors) {
    unsigned int flags =
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
    if (ipv6) flags |= MHD_USE_IPv6;
    /* The logger first, so that it also gets the messages about the options. */
    return MHD_start_daemon(
        flags, 0, NULL, NULL, handler, handler_context,
        MHD_OPTION_EXTERNAL_LOGGER, peersync_http_log, (void *)errors,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
        MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
        MHD_OPTION_URI_LOG_CALLBACK, peersync_http_request_line, (void *)errors,
        MHD_OPTION_NOTIFY_CONNECTION, peersync_http_connection_event, (void *)errors,
        MHD_OPTION_END);
}

/* The socket of a connection (MHD_get_connection_info is variadic), or -1. */
static inline int peersync_http_connection_socket(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

/* Has libmicrohttpd look at a connection on every round of its loop (at
   most a second apart) by giving it a timeout of its own, 1 s
   (MHD_set_connection_option is variadic). */
static inline void peersync_http_revisit_soon(struct MHD_Connection *connection) {
    MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned int)1);
}
