/* Piola mesh text input (mesh_text.h): the line reader, fields and locale-independent numbers
 * shared by the TetGen and Gmsh loaders. */
#include "mesh_text.h"

#include <errno.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#define READ_CHUNK_BYTES ((size_t)1 << 16)
#define INITIAL_RECORDS ((int64_t)1 << 14)

/* ---- Lines and records ------------------------------------------------------------------ */

static void reader_fail_v(const piola_line_reader *r, long line, const char *format, va_list args) {
  char what[768];
  vsnprintf(what, sizeof what, format, args);
  if (line > 0) {
    piola_log(r->logger, PIOLA_LOG_ERROR, "%s:%ld: %s", r->path, line, what);
  } else {
    piola_log(r->logger, PIOLA_LOG_ERROR, "%s: %s", r->path, what);
  }
}

piola_status piola_reader_fail(const piola_line_reader *r, piola_status status, long line,
                               const char *format, ...) {
  va_list args;
  va_start(args, format);
  reader_fail_v(r, line, format, args);
  va_end(args);
  return status;
}

static bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

piola_status piola_reader_open(piola_line_reader *r, const char *path, const piola_logger *logger) {
  memset(r, 0, sizeof *r);
  r->path = path;
  r->logger = logger;
  r->comment = '#';
  errno = 0;
  r->file = fopen(path, "rb");
  if (r->file == NULL) {
    int code = errno;
    return piola_reader_fail(r, PIOLA_ERROR_IO, 0, "cannot open for reading (%s)",
                             code != 0 ? strerror(code) : "unknown reason");
  }
  r->chunk = malloc(READ_CHUNK_BYTES);
  if (r->chunk == NULL) {
    fclose(r->file);
    r->file = NULL;
    return piola_reader_fail(r, PIOLA_ERROR_OUT_OF_MEMORY, 0, "out of memory for a read buffer");
  }
  return PIOLA_OK;
}

void piola_reader_close(piola_line_reader *r) {
  if (r->file != NULL) {
    fclose(r->file);
  }
  free(r->chunk);
  free(r->line);
  memset(r, 0, sizeof *r);
}

piola_status piola_reader_line(piola_line_reader *r, bool *got) {
  size_t len = 0;
  bool any = false;
  *got = false;
  for (;;) {
    if (r->chunk_pos == r->chunk_len) {
      if (r->at_end) {
        break;
      }
      errno = 0;
      r->chunk_len = fread(r->chunk, 1, READ_CHUNK_BYTES, r->file);
      r->chunk_pos = 0;
      if (r->chunk_len == 0) {
        if (ferror(r->file)) {
          int code = errno;
          return piola_reader_fail(r, PIOLA_ERROR_IO, r->line_number + 1, "read error (%s)",
                                   code != 0 ? strerror(code) : "unknown reason");
        }
        r->at_end = true;
        break;
      }
    }
    const char *start = r->chunk + r->chunk_pos;
    size_t avail = r->chunk_len - r->chunk_pos;
    const char *newline = memchr(start, '\n', avail);
    size_t take = newline != NULL ? (size_t)(newline - start) : avail;
    any = true;
    if (take >= PIOLA_LINE_LIMIT_BYTES - len) {
      return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number + 1,
                               "line longer than %zu bytes", PIOLA_LINE_LIMIT_BYTES - 1);
    }
    if (len + take + 1 > r->line_cap) {
      size_t cap = r->line_cap > 0 ? r->line_cap : 256;
      while (cap < len + take + 1) {
        cap *= 2;
      }
      char *grown = realloc(r->line, cap);
      if (grown == NULL) {
        return piola_reader_fail(r, PIOLA_ERROR_OUT_OF_MEMORY, r->line_number + 1,
                                 "out of memory for a line of %zu bytes", len + take);
      }
      r->line = grown;
      r->line_cap = cap;
    }
    memcpy(r->line + len, start, take);
    len += take;
    r->chunk_pos += take + (newline != NULL ? 1 : 0);
    if (newline != NULL) {
      break;
    }
  }
  if (!any) {
    return PIOLA_OK;
  }
  r->line[len] = '\0';
  r->line_number++;
  if (memchr(r->line, '\0', len) != NULL) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "NUL byte in the line (not a text file?)");
  }
  if (r->line_number == 1 && len >= 3 && memcmp(r->line, "\xEF\xBB\xBF", 3) == 0) {
    memmove(r->line, r->line + 3, len - 2); /* UTF-8 byte order mark */
  }
  *got = true;
  return PIOLA_OK;
}

piola_status piola_reader_record(piola_line_reader *r, bool *got) {
  for (;;) {
    piola_status s = piola_reader_line(r, got);
    if (s != PIOLA_OK || !*got) {
      return s;
    }
    char *comment = r->comment != '\0' ? strchr(r->line, r->comment) : NULL;
    if (comment != NULL) {
      *comment = '\0';
    }
    for (const char *c = r->line; *c != '\0'; ++c) {
      if (!is_blank(*c)) {
        return PIOLA_OK;
      }
    }
  }
}

/* ---- Fields and numbers ----------------------------------------------------------------- */

int64_t piola_count_fields(const char *s) {
  int64_t n = 0;
  while (*s != '\0') {
    while (is_blank(*s)) {
      ++s;
    }
    if (*s == '\0') {
      break;
    }
    ++n;
    while (*s != '\0' && !is_blank(*s)) {
      ++s;
    }
  }
  return n;
}

piola_field piola_next_field(const char **cursor) {
  const char *s = *cursor;
  while (is_blank(*s)) {
    ++s;
  }
  const char *start = s;
  while (*s != '\0' && !is_blank(*s)) {
    ++s;
  }
  *cursor = s;
  size_t len = (size_t)(s - start);
  /* Lines are shorter than PIOLA_LINE_LIMIT_BYTES, so the length fits an int. */
  piola_field f = {start, (int)len};
  return f;
}

bool piola_field_is(piola_field f, const char *word) {
  size_t n = strlen(word);
  return (size_t)f.len == n && memcmp(f.text, word, n) == 0;
}

/* Copies a number field into buf (NUL-terminated), '.' replaced by the locale's decimal point
 * so that strtod() reads it in any locale. False for a field too long or with characters no
 * number has (so "1,5" is rejected in every locale). */
static bool copy_number(piola_field f, bool real, char buf[2 * PIOLA_NUMBER_CHARS + 8]) {
  if (f.len <= 0 || f.len > PIOLA_NUMBER_CHARS) {
    return false;
  }
  const char *point = ".";
  if (real) {
    const struct lconv *conv = localeconv();
    if (conv != NULL && conv->decimal_point != NULL && conv->decimal_point[0] != '\0' &&
        strlen(conv->decimal_point) <= 4) {
      point = conv->decimal_point;
    }
  }
  size_t point_len = strlen(point);
  size_t n = 0;
  for (int i = 0; i < f.len; ++i) {
    char c = f.text[i];
    bool digit = c >= '0' && c <= '9';
    bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (digit || c == '+' || c == '-') {
      buf[n++] = c;
    } else if (real && letter) {
      buf[n++] = c; /* exponents, hex digits, inf, nan */
    } else if (real && c == '.') {
      memcpy(buf + n, point, point_len);
      n += point_len;
    } else {
      return false;
    }
  }
  buf[n] = '\0';
  return true;
}

bool piola_parse_integer(piola_field f, int64_t *out) {
  char buf[2 * PIOLA_NUMBER_CHARS + 8];
  if (!copy_number(f, false, buf)) {
    return false;
  }
  char *end = NULL;
  errno = 0;
  long long v = strtoll(buf, &end, 10);
  if (end == buf || *end != '\0') {
    return false;
  }
  *out = (int64_t)v;
  return true;
}

bool piola_parse_real(piola_field f, double *out) {
  char buf[2 * PIOLA_NUMBER_CHARS + 8];
  if (!copy_number(f, true, buf)) {
    return false;
  }
  char *end = NULL;
  double v = strtod(buf, &end);
  if (end == buf || *end != '\0') {
    return false;
  }
  *out = v; /* overflow gives +-HUGE_VAL, caught by the finiteness check; underflow is fine */
  return true;
}

/* ---- Records and counts ------------------------------------------------------------------ */

bool piola_grow_records(void **array, int64_t *cap, int64_t need, int64_t limit, size_t size) {
  if (need <= *cap) {
    return true;
  }
  int64_t next = *cap > 0 ? *cap : INITIAL_RECORDS;
  while (next < need) {
    next *= 2;
  }
  if (next > limit) {
    next = limit;
  }
  if ((uint64_t)next > (uint64_t)(SIZE_MAX / size)) {
    return false;
  }
  void *grown = realloc(*array, (size_t)next * size);
  if (grown == NULL) {
    return false;
  }
  *array = grown;
  *cap = next;
  return true;
}

piola_status piola_reader_count(const piola_line_reader *r, piola_field f, const char *what,
                                int64_t limit, int64_t *out) {
  int64_t v = 0;
  if (!piola_parse_integer(f, &v)) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number, "malformed %s '%.*s'", what,
                             PIOLA_FIELD_SHOWN(f));
  }
  if (v < 0 || v >= limit) {
    return piola_reader_fail(r, PIOLA_ERROR_PARSE, r->line_number,
                             "%s '%.*s' out of range (0 to %lld)", what, PIOLA_FIELD_SHOWN(f),
                             (long long)(limit - 1));
  }
  *out = v;
  return PIOLA_OK;
}
