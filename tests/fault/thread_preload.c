/*
 * thread_preload.c: LD_PRELOADed by background.sh, starts one thread before
 * main(). mafsbxfs must then refuse to go into the background (a thread
 * that exists at the fork is lost in the daemon), with its message.
 */
#include <pthread.h>
#include <unistd.h>

static void *idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

__attribute__((constructor)) static void start_one_thread(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, idle, NULL) == 0)
		pthread_detach(t);
}
