/* `piola run`: simulates a scene and writes frames as legacy VTK unstructured grids (one file
 * per frame, tets with per-tet elastic energy density), for ParaView or any VTK reader, and
 * prints per frame the time, energies and inverted tets. */
#include "commands.h"
#include "scene.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Writes one frame: all bodies' vertices and tets. */
static int write_vtk(const char *path, const scene *sc, const piola_tet_mesh *mesh,
                     const float *positions, int32_t total_vertices) {
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "piola run: cannot write %s: %s\n", path, strerror(errno));
    return 1;
  }
  int64_t tets = (int64_t)sc->body_count * mesh->tet_count;
  fprintf(f, "# vtk DataFile Version 3.0\npiola frame\nASCII\nDATASET UNSTRUCTURED_GRID\n");
  fprintf(f, "POINTS %d float\n", (int)total_vertices);
  for (int32_t i = 0; i < total_vertices; ++i) {
    fprintf(f, "%.7g %.7g %.7g\n", (double)positions[3 * i], (double)positions[3 * i + 1],
            (double)positions[3 * i + 2]);
  }
  fprintf(f, "CELLS %lld %lld\n", (long long)tets, (long long)(5 * tets));
  for (int32_t b = 0; b < sc->body_count; ++b) {
    int32_t off = b * mesh->vertex_count;
    for (int32_t t = 0; t < mesh->tet_count; ++t) {
      const int32_t *q = mesh->tets + 4 * t;
      fprintf(f, "4 %d %d %d %d\n", (int)(q[0] + off), (int)(q[1] + off), (int)(q[2] + off),
              (int)(q[3] + off));
    }
  }
  fprintf(f, "CELL_TYPES %lld\n", (long long)tets);
  for (int64_t t = 0; t < tets; ++t) {
    fputs("10\n", f);
  }
  int bad = ferror(f);
  bad |= fclose(f);
  if (bad) {
    fprintf(stderr, "piola run: error writing %s\n", path);
  }
  return bad ? 1 : 0;
}

static void print_help(void) {
  printf("Usage: piola run [options]\n"
         "Simulates a scene and prints per frame the simulated time, elastic and kinetic\n"
         "energy and inverted tets; with --out, writes each frame as a VTK file.\n\n"
         "  --steps N     steps to simulate (default 200)\n"
         "  --every K     a frame every K steps (default 10)\n"
         "  --out DIR     write DIR/frame_NNNNN.vtk (DIR is created)\n\n");
  scene_print_help();
}

int command_run(int argc, char **argv) {
  scene_options o = scene_default_options();
  o.bodies = 4;
  int32_t steps = 200, every = 10;
  const char *out = NULL;
  for (int i = 0; i < argc; ++i) {
    int k = scene_parse_option(&o, argc, argv, &i);
    if (k < 0) {
      return 2;
    }
    if (k > 0) {
      continue;
    }
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--steps") == 0 && parse_int(a, v, 1, &steps)) {
      ++i;
    } else if (strcmp(a, "--every") == 0 && parse_int(a, v, 1, &every)) {
      ++i;
    } else if (strcmp(a, "--out") == 0 && v != NULL) {
      out = v;
      ++i;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      print_help();
      return 0;
    } else {
      fprintf(stderr, "piola run: unknown or incomplete option '%s' (see --help)\n", a);
      return 2;
    }
  }
  if (out != NULL && mkdir(out, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "piola run: cannot create %s: %s\n", out, strerror(errno));
    return 1;
  }
  scene sc;
  if (scene_build(&o, PIOLA_BACKEND_AUTO, &sc) != PIOLA_OK) {
    return 1;
  }
  piola_tet_mesh mesh;
  char name[64];
  if (scene_load_mesh(&o, &mesh, name, sizeof name) != PIOLA_OK) {
    scene_destroy(&sc);
    return 1;
  }
  int32_t total = sc.body_count * sc.body_vertex_count;
  float *positions = malloc(sizeof *positions * 3 * (size_t)total);
  int status = positions == NULL;
  piola_stats st;
  piola_world_get_stats(sc.world, &st);
  printf("piola run: %s x%d on %s (%s), %d steps of %g s\n", sc.name, (int)sc.body_count,
         piola_backend_name(st.backend), st.device_name, (int)steps, (double)o.dt);
  printf("%6s %9s %14s %14s %9s %10s\n", "frame", "time s", "elastic J", "kinetic J", "inverted",
         "step ms");
  for (int32_t step = 0, frame = 0; step <= steps && status == 0; ++step) {
    if (step > 0 && piola_world_step(sc.world) != PIOLA_OK) {
      fprintf(stderr, "piola run: step %d failed\n", (int)step);
      status = 1;
      break;
    }
    if (step % every != 0) {
      continue;
    }
    if (piola_world_get_stats(sc.world, &st) != PIOLA_OK) {
      status = 1;
      break;
    }
    printf("%6d %9.4f %14.6e %14.6e %9d %10.3f\n", (int)frame, st.simulated_time, st.elastic_energy,
           st.kinetic_energy, (int)st.inverted_tets, st.last_step_ms);
    if (out != NULL) {
      for (int32_t b = 0; b < sc.body_count && status == 0; ++b) {
        status = piola_body_get_positions(sc.world, sc.bodies[b],
                                          positions + 3 * (size_t)b * sc.body_vertex_count,
                                          sc.body_vertex_count) != PIOLA_OK;
      }
      char path[4096];
      snprintf(path, sizeof path, "%s/frame_%05d.vtk", out, (int)frame);
      status = status || write_vtk(path, &sc, &mesh, positions, total);
    }
    ++frame;
  }
  free(positions);
  piola_mesh_free(&mesh);
  scene_destroy(&sc);
  return status;
}
