/* SPDX-License-Identifier: MIT */
/*
 * The answer of a Pushgateway to pcpu_metrics_push() (<percpu/metrics_http.h>),
 * over loopback TCP: a thread of this target, started once on 127.0.0.1
 * and a port of its choosing, reads each request whole and answers it with
 * the input's bytes (after the flag byte), then closes. The flag byte's
 * bit 0 picks DELETE (no body) or PUT (the exposition of one counter);
 * bit 1 a message buffer of 16 bytes instead of 512.
 *
 * libcurl parses the answer; what percpu does with it is the status's
 * errno and the message. Checks: the call returns 0 or an errno that
 * pcpu_metrics_push() documents for an answer or a transport; the message
 * is NUL-terminated in its buffer, one line without control bytes; "" on
 * success; "HTTP " and a status on an errno that a status maps to.
 */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <percpu/counter.h>
#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

#include "fuzz.h"

static struct pcpu_counter pushes;
static int listen_fd;
static char url[64];
static const uint8_t *answer;
static size_t answer_len;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static bool answer_ready;

/* The Content-Length of the request's headers in @req (0: none). */
static size_t content_length(const char *req)
{
	const char *p = strcasestr(req, "\r\nContent-Length:");

	return p ? strtoul(p + 17, NULL, 10) : 0;
}

/* Reads one request whole: the headers, then as many bytes as they announce. */
static void read_request(int c)
{
	char req[8192];
	size_t n = 0, want = 0;
	char *end = NULL;
	ssize_t r;

	for (;;) {
		r = read(c, req + n, sizeof(req) - 1 - n);
		if (r <= 0)
			return;
		n += (size_t)r;
		req[n] = '\0';
		if (!end && (end = strstr(req, "\r\n\r\n")))
			want = (size_t)(end + 4 - req) + content_length(req);
		if ((end && n >= want) || n + 1 >= sizeof(req))
			return;
	}
}

static void *gateway(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept(listen_fd, NULL, NULL);

		if (c < 0)
			continue;
		read_request(c);
		pthread_mutex_lock(&lock);
		while (!answer_ready)
			pthread_cond_wait(&cond, &lock);
		if (answer_len)
			FUZZ_CHECK(write(c, answer, answer_len) >= 0 || errno == EPIPE ||
					   errno == ECONNRESET, "write: %d", errno);
		answer_ready = false;
		pthread_mutex_unlock(&lock);
		shutdown(c, SHUT_WR);
		close(c);
	}
	return NULL;
}

static void start(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	pthread_t t;

	signal(SIGPIPE, SIG_IGN);
	/* no proxy of the environment between the call and this listener */
	setenv("no_proxy", "127.0.0.1", 1);
	FUZZ_CHECK(pcpu_counter_init(&pushes, 0) == 0, "init");
	FUZZ_CHECK(pcpu_counter_register(&pushes, &(struct pcpu_metric_desc){
						   .name = "fuzz_pushes", .kind = PCPU_METRIC_COUNTER,
						   .help = "Pushes." }) == 0,
		   "register");
	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	FUZZ_CHECK(listen_fd >= 0, "socket");
	FUZZ_CHECK(bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind");
	FUZZ_CHECK(listen(listen_fd, 16) == 0, "listen");
	FUZZ_CHECK(getsockname(listen_fd, (struct sockaddr *)&a, &len) == 0, "getsockname");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", ntohs(a.sin_port));
	FUZZ_CHECK(pthread_create(&t, NULL, gateway, NULL) == 0, "thread");
}

static bool documented(int err)
{
	static const int ok[] = { 0, -EBADMSG, -EACCES, -EPERM, -ENOENT, -EPROTO, -EIO,
				  -ECONNRESET, -ETIMEDOUT, -ENOMEM };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (err == ok[i])
			return true;
	return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	char message[512 + 1];
	uint8_t flags = size ? data[0] : 0;
	size_t msize = flags & 2 ? 16 : 512, len;
	int err;

	if (!ready) {
		start();
		ready = true;
	}
	pcpu_counter_add(&pushes, 1);
	pthread_mutex_lock(&lock);
	answer = size ? data + 1 : data;
	answer_len = size ? size - 1 : 0;
	answer_ready = true;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);

	memset(message, 'x', sizeof(message));
	err = pcpu_metrics_push(&(struct pcpu_metrics_push_options){
					.size = sizeof(struct pcpu_metrics_push_options),
					.url = url, .job = "fuzz", .timeout_ms = 2000 },
				flags & 1 ? PCPU_METRICS_PUSH_DELETE : PCPU_METRICS_PUSH_PUT, message,
				msize);
	/* the answer taken, or the call gave up before the thread wrote it */
	pthread_mutex_lock(&lock);
	answer_ready = false;
	pthread_mutex_unlock(&lock);

	FUZZ_CHECK(documented(err), "an errno not documented: %d", err);
	len = strnlen(message, msize);
	FUZZ_CHECK(len < msize, "the message not terminated in its buffer");
	FUZZ_CHECK(message[msize] == 'x', "a byte written past the buffer");
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK((unsigned char)message[i] >= ' ' && message[i] != 0x7f,
			   "a control byte at %zu", i);
	if (!err)
		FUZZ_CHECK(len == 0, "a message on success: %s", message);
	if (err == -EBADMSG || err == -EACCES || err == -EPERM || err == -ENOENT ||
	    err == -EPROTO || err == -EIO)
		FUZZ_CHECK(strncmp(message, "HTTP ", 5) == 0 || err == -EPROTO,
			   "a status's errno without its status: %s", message);
	return 0;
}
