/* Piola: soft bodies on any OpenCL device, with a double-precision CPU reference.
 *
 * Base definitions shared by every public header: the export macro, the version and the
 * fixed-width types. Nothing here allocates or holds state.
 */
#ifndef PIOLA_BASE_H
#define PIOLA_BASE_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && defined(PIOLA_SHARED)
#if defined(PIOLA_BUILDING)
#define PIOLA_API __declspec(dllexport)
#else
#define PIOLA_API __declspec(dllimport)
#endif
#elif defined(__GNUC__) && defined(PIOLA_SHARED)
#define PIOLA_API __attribute__((visibility("default")))
#else
#define PIOLA_API
#endif

/* The version's one home: CMakeLists.txt reads these three lines for the project version (the
 * shared library's VERSION and SONAME, PiolaConfigVersion.cmake, piola.pc). */
#define PIOLA_VERSION_MAJOR 0
#define PIOLA_VERSION_MINOR 1
#define PIOLA_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/** The library's version as "major.minor.patch". */
PIOLA_API const char *piola_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* PIOLA_BASE_H */
