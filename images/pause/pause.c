/* pause: the process that holds a Kubernetes pod's namespaces. It waits
 * for SIGTERM or SIGINT and reaps any child it inherits, nothing else.
 * Built static (scripts/kube-up.sh: gcc -static) into a FROM-scratch image,
 * since this machine has no registry to pull registry.k8s.io/pause from. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) { (void)sig; _exit(0); }

static void reap(int sig) {
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0) {
	}
}

int main(void) {
	struct sigaction term = {.sa_handler = stop};
	struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
	sigaction(SIGTERM, &term, NULL);
	sigaction(SIGINT, &term, NULL);
	sigaction(SIGCHLD, &child, NULL);
	for (;;)
		pause();
	return 0;
}
