/* SPDX-License-Identifier: MIT */
/*
 * pcpu_metrics_push() as the packages build it (with libcurl): against a
 * loopback port that a socket of ours holds bound but not listening (the
 * kernel refuses a connection there, and nothing else can take the port
 * meanwhile), a push is -ECONNREFUSED with a reason in its message; and
 * options without a job are -EINVAL before any connection. No network.
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <percpu/metrics.h>
#include <percpu/metrics_http.h>

PCPU_COUNTER_DEFINE(jobs, "autopkgtest_jobs", "Jobs run.");

static int fail(const char *what)
{
	fprintf(stderr, "push-closed-port: %s\n", what);
	return 1;
}

int main(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	struct pcpu_metrics_push_options o = { .size = sizeof(o), .job = "autopkgtest",
					       .timeout_ms = 5000 };
	char url[64], message[512];
	int s = socket(AF_INET, SOCK_STREAM, 0), err;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    getsockname(s, (struct sockaddr *)&a, &len) != 0)
		return fail("cannot bind a loopback socket");
	snprintf(url, sizeof(url), "http://127.0.0.1:%u", (unsigned int)ntohs(a.sin_port));
	o.url = url;
	pcpu_counter_add(&jobs, 1);

	err = pcpu_metrics_push(&o, PCPU_METRICS_PUSH_PUT, message, sizeof(message));
	printf("pcpu_metrics_push(PUT %s): %d (%s): \"%s\"\n", url, err, strerror(-err), message);
	if (err == -ENOTSUP)
		return fail("the library was built without libcurl (-ENOTSUP)");
	if (err != -ECONNREFUSED)
		return fail("a closed port: not -ECONNREFUSED");
	if (message[0] == '\0')
		return fail("a closed port: no reason in the message");

	o.job = NULL;
	err = pcpu_metrics_push(&o, PCPU_METRICS_PUSH_PUT, message, sizeof(message));
	printf("pcpu_metrics_push(no job): %d (%s): \"%s\"\n", err, strerror(-err), message);
	if (err != -EINVAL)
		return fail("options without a job: not -EINVAL");
	close(s);
	return 0;
}
