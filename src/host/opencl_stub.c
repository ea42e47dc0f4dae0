/* Piola without OpenCL: the OpenCL backend's entry points (piola_internal.h) for a build
 * configured with PIOLA_OPENCL=OFF, for instance on a machine without OpenCL headers; CMake
 * compiles this file instead of opencl_backend.c. Creating an OpenCL world answers
 * PIOLA_ERROR_UNSUPPORTED (PIOLA_BACKEND_AUTO then falls back to the CPU reference), no world
 * ever holds device state (w->cl stays NULL, so world.c never calls the rest), and
 * piola_list_devices() finds no device. Every function declared in the OpenCL section of
 * piola_internal.h must be defined here too: CI builds this configuration with -Werror.
 */
#include "piola_internal.h"

piola_status piola_opencl_create(piola_world *w, piola_faults *faults) {
  (void)faults;
  piola_log(&w->def.logger, PIOLA_LOG_ERROR,
            "this build of Piola has no OpenCL backend (configure with -DPIOLA_OPENCL=ON)");
  return PIOLA_ERROR_UNSUPPORTED;
}
bool piola_opencl_lost(const piola_world *w) {
  (void)w;
  return false;
}
piola_status piola_opencl_abort_step(piola_world *w, bool from_host, piola_status s) {
  (void)w;
  (void)from_host;
  return s;
}
void piola_opencl_destroy(piola_world *w) {
  (void)w;
}
piola_status piola_opencl_begin_step(piola_world *w) {
  (void)w;
  return PIOLA_ERROR_UNSUPPORTED;
}
piola_status piola_opencl_stage(piola_world *w, piola_stage stage, double h) {
  (void)w;
  (void)stage;
  (void)h;
  return PIOLA_ERROR_UNSUPPORTED;
}
piola_status piola_opencl_end_step(piola_world *w) {
  (void)w;
  return PIOLA_ERROR_UNSUPPORTED;
}
piola_status piola_opencl_program_binary(const piola_world *w, bool packets, unsigned char **binary,
                                         size_t *size, const char **options) {
  (void)w;
  (void)packets;
  *binary = NULL;
  *size = 0;
  *options = "";
  return PIOLA_ERROR_UNSUPPORTED;
}
bool piola_opencl_per_body(const piola_world *w) {
  (void)w;
  return false;
}
piola_status piola_opencl_substep_bodies(piola_world *w, double h, piola_bodies_part part) {
  (void)w;
  (void)h;
  (void)part;
  return PIOLA_ERROR_UNSUPPORTED;
}
piola_status piola_opencl_finish(piola_world *w) {
  (void)w;
  return PIOLA_ERROR_UNSUPPORTED;
}
bool piola_opencl_live(const piola_world *w) {
  (void)w;
  return false;
}
piola_status piola_opencl_pull(piola_world *w) {
  (void)w;
  return PIOLA_OK;
}
void piola_opencl_invalidate(piola_world *w) {
  (void)w;
}
void piola_opencl_colliders_changed(piola_world *w, int32_t first, int32_t end) {
  (void)w;
  (void)first;
  (void)end;
}
piola_status piola_opencl_pull_range(piola_world *w, int32_t first, int32_t count) {
  (void)w;
  (void)first;
  (void)count;
  return PIOLA_OK;
}
piola_status piola_opencl_push_range(piola_world *w, int32_t first, int32_t count, bool positions,
                                     bool velocities) {
  (void)w;
  (void)first;
  (void)count;
  (void)positions;
  (void)velocities;
  return PIOLA_OK;
}
piola_status piola_opencl_push_forces(piola_world *w, int32_t first, int32_t count) {
  (void)w;
  (void)first;
  (void)count;
  return PIOLA_OK;
}
piola_status piola_opencl_read_range(const piola_world *w, int32_t first, int32_t count, float *xyz,
                                     float *vel) {
  (void)w;
  (void)first;
  (void)count;
  (void)xyz;
  (void)vel;
  return PIOLA_ERROR_UNSUPPORTED;
}
piola_status piola_opencl_read_all(const piola_world *w, double *x, double *v, double *tet_m,
                                   double *lambda) {
  (void)w;
  (void)x;
  (void)v;
  (void)tet_m;
  (void)lambda;
  return PIOLA_ERROR_UNSUPPORTED;
}
int64_t piola_opencl_device_bytes(const piola_world *w) {
  (void)w;
  return 0;
}
piola_status piola_opencl_contact_counters(const piola_world *w, int32_t out[2]) {
  (void)w;
  out[0] = out[1] = 0;
  return PIOLA_ERROR_UNSUPPORTED;
}
const char *piola_opencl_device_name(const piola_world *w) {
  (void)w;
  return "";
}
int32_t piola_opencl_simd_lanes(const piola_world *w) {
  (void)w;
  return 0;
}
void piola_opencl_stage_ms(const piola_world *w, double out[PIOLA_STAGE_COUNT]) {
  (void)w;
  for (int i = 0; i < PIOLA_STAGE_COUNT; ++i) {
    out[i] = 0.0;
  }
}
int32_t piola_opencl_kernel_times(const piola_world *w, piola_kernel_time *out, int32_t capacity) {
  (void)w;
  (void)out;
  (void)capacity;
  return 0;
}
piola_status piola_list_devices(piola_device_info *devices, int32_t capacity, int32_t *count) {
  (void)devices;
  if (count == NULL || capacity < 0) {
    return PIOLA_ERROR_INVALID_ARGUMENT;
  }
  *count = 0;
  return PIOLA_OK;
}
piola_status piola_opencl_try_build(const char *device_spec, const char *source,
                                    const piola_logger *logger) {
  (void)device_spec;
  (void)source;
  (void)logger;
  return PIOLA_ERROR_UNSUPPORTED;
}
piola_status piola_opencl_layout_probe(const char *device_spec, int32_t out[16],
                                       const piola_logger *logger) {
  (void)device_spec;
  (void)out;
  (void)logger;
  return PIOLA_ERROR_UNSUPPORTED;
}
void piola_opencl_render_release(const piola_world *w, piola_render_mesh *rm) {
  (void)w;
  (void)rm;
}
piola_status piola_opencl_render_upload(piola_world *w, piola_render_mesh *rm,
                                        const piola_body *b) {
  (void)w;
  (void)rm;
  (void)b;
  return PIOLA_ERROR_UNSUPPORTED;
}
piola_status piola_opencl_render_compute(const piola_world *w, const piola_render_mesh *rm,
                                         const piola_body *b, float *positions, float *normals) {
  (void)w;
  (void)rm;
  (void)b;
  (void)positions;
  (void)normals;
  return PIOLA_ERROR_UNSUPPORTED;
}
piola_status piola_opencl_attachments_upload(piola_world *w) {
  (void)w;
  return PIOLA_ERROR_UNSUPPORTED;
}
void piola_opencl_attachments_release(const piola_world *w, piola_solver_attachments *a) {
  (void)w;
  (void)a;
}
