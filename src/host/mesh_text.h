/* Piola mesh text input, shared by the mesh loaders (mesh_io.c: TetGen, mesh_gmsh.c: Gmsh,
 * mesh_obj.c: Wavefront OBJ): a line reader with "path:line: message" failures, blank-separated
 * fields, and numbers read with '.' as the decimal point whatever the C locale of the process is.
 *
 * Lines may be up to PIOLA_LINE_LIMIT_BYTES long and end in "\n" or "\r\n" (a CR is a blank);
 * a UTF-8 byte order mark on the first line is skipped, a NUL byte is a parse error. Every
 * failure logs exactly one message through the reader's logger. Not installed.
 */
#ifndef PIOLA_MESH_TEXT_H
#define PIOLA_MESH_TEXT_H

#include "common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PIOLA_MESH_COUNT_LIMIT ((int64_t)1 << 30) /* counts of a mesh file must be below this */
#define PIOLA_LINE_LIMIT_BYTES ((size_t)1 << 24)
#define PIOLA_NUMBER_CHARS 256 /* longest number field accepted, in characters */

typedef struct piola_line_reader {
  FILE *file;
  const char *path;
  const piola_logger *logger;
  /* The character that starts a comment running to the end of the line in
   * piola_reader_record(): '#' after piola_reader_open(); '\0' for formats without comments. */
  char comment;
  char *chunk; /* read ahead */
  size_t chunk_len, chunk_pos;
  bool at_end;
  char *line; /* the current line, NUL-terminated, without its '\n' (comment cut off) */
  size_t line_cap;
  long line_number; /* 1-based number of the current line; 0 before the first */
} piola_line_reader;

/* Opens `path` for reading (PIOLA_ERROR_IO, logged, when it cannot be opened). The reader only
 * keeps `path` and `logger`, which must outlive it. */
piola_status piola_reader_open(piola_line_reader *r, const char *path, const piola_logger *logger);

/* Closes the file and frees the buffers (also after a failed open). */
void piola_reader_close(piola_line_reader *r);

/* Logs "path:line: message" ("path: message" when line <= 0) and returns `status`. */
piola_status piola_reader_fail(const piola_line_reader *r, piola_status status, long line,
                               const char *format, ...) PIOLA_PRINTF(4, 5);

/* Reads the next line into r->line; *got is false at the end of the file. */
piola_status piola_reader_line(piola_line_reader *r, bool *got);

/* Reads up to the next line holding something other than blanks (and a comment, which is cut
 * off); *got is false at the end of the file. */
piola_status piola_reader_record(piola_line_reader *r, bool *got);

/* A blank-separated field of a line: not NUL-terminated; len is its length in characters
 * (fields longer than PIOLA_NUMBER_CHARS are no number). */
typedef struct piola_field {
  const char *text;
  int len;
} piola_field;

/* The number of fields of a NUL-terminated line. */
int64_t piola_count_fields(const char *s);

/* The next field after *cursor, which it advances (an empty field when there is none). */
piola_field piola_next_field(const char **cursor);

/* Whether a field is exactly the NUL-terminated `word`. */
bool piola_field_is(piola_field f, const char *word);

/* Field text for "%.*s" in messages: at most 40 characters of it. */
#define PIOLA_FIELD_SHOWN(f) ((f).len > 40 ? 40 : (f).len), (f).text

/* A base-10 integer filling the whole field; one beyond 64 bits saturates (range checks then
 * reject it, and messages quote the field itself). */
bool piola_parse_integer(piola_field f, int64_t *out);

/* A real number filling the whole field, '.' as decimal point in every locale ("1,5" is
 * rejected); it may be non-finite (inf, nan, 1e999). */
bool piola_parse_real(piola_field f, double *out);

/* Parses a count field: an integer in [0, limit); PARSE (logged on the current line) else. */
piola_status piola_reader_count(const piola_line_reader *r, piola_field f, const char *what,
                                int64_t limit, int64_t *out);

/* Grows an array of records of `size` bytes so it holds at least `need` of them (need <=
 * limit), doubling from a few thousand up to `limit`; false when out of memory. Growing with
 * the records actually read keeps a huge declared count from allocating memory that the file
 * cannot fill. */
bool piola_grow_records(void **array, int64_t *cap, int64_t need, int64_t limit, size_t size);

#endif /* PIOLA_MESH_TEXT_H */
