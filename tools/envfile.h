/*
 * envfile.h: docker's environment words for `mafsbx exec` (mafsbx(1)):
 * `-e KEY=VALUE`, `-e KEY` (the value of KEY in this process's environment,
 * nothing when KEY is unset, as `docker exec -e KEY`) and `--env-file FILE`
 * in docker's format. Pure parsing into a JSON object of strings, the
 * request's "env" field; no engine, so the unit tests link it directly.
 */
#ifndef MAFSBX_TOOLS_ENVFILE_H
#define MAFSBX_TOOLS_ENVFILE_H

#include <stddef.h>

#include <jansson.h>

/* A file larger than this is refused: an environment, not a data file. */
#define ENVFILE_MAX_BYTES (1024 * 1024)

/*
 * One word into `env`: "KEY=VALUE" sets KEY; "KEY" alone takes KEY's value
 * from getenv(), and sets nothing when KEY is unset. 0, or -1 with `why`
 * (of `n` bytes) saying what is wrong: an empty or malformed name, a word
 * or value that is not UTF-8, no memory.
 */
int envfile_put(json_t *env, const char *word, char *why, size_t n);

/*
 * docker's --env-file text: one word per line as envfile_put takes it,
 * leading blanks dropped, a trailing '\r' dropped, blank lines and lines
 * starting with '#' skipped, no quoting (the value is the rest of the line).
 * 0, or the number (from 1) of the first bad line with `why` set; a later
 * line for the same KEY wins.
 */
long envfile_parse(json_t *env, const char *text, size_t len, char *why, size_t n);

/* Read and parse FILE: 0, or -1 with `why` naming FILE (and the line when one is bad). */
int envfile_load(json_t *env, const char *path, char *why, size_t n);

#endif
