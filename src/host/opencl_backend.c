/* Piola OpenCL backend: its table of operations (backend.h). The step runs as kernel launches
 * on one in-order queue, on any OpenCL 1.2 device; the kernels (kernels/piola_step.cl and the
 * files beside it) are embedded at build time together with the shared math headers, and built
 * once per world for its device. Every cl* call is checked; failures return a piola_status, the
 * OpenCL error code goes to the logger, and whatever was created is released. Nothing waits on
 * the device inside a step: a step is a sequence of enqueues and a flush; read-backs happen only
 * when the user asks for data. The multigrid scheme is the exception: its global solve runs on
 * the host between the device's stages, reading the vertices back and writing them again every
 * iteration (opencl_newton.c).
 *
 * Compiled only with PIOLA_OPENCL=ON (PIOLA_WITH_OPENCL); a build without it has no such table,
 * and PIOLA_BACKEND_AUTO then uses the CPU reference. */
#include "opencl_internal.h"

#include <stdio.h>

/* The host arrays are current while the device does not hold the live state. */
static bool opencl_host_current(const piola_world *w) {
  return !piola_opencl_live(w);
}

/* Reads the contact counters from the device where it holds the live state; else the host's. */
static piola_status opencl_contact_counters(const piola_world *w, int32_t out[4]) {
  if (!piola_opencl_live(w)) {
    out[0] = w->contacts.total;
    out[1] = w->contacts.overflow;
    return PIOLA_OK;
  }
  return piola_opencl_contact_counters(w, out);
}

static void opencl_describe(const piola_world *w, piola_stats *st) {
  st->device_bytes = piola_opencl_device_bytes(w);
  snprintf(st->device_name, sizeof st->device_name, "%s", piola_opencl_device_name(w));
  st->simd_lanes = piola_opencl_simd_lanes(w);
  piola_opencl_stage_ms(w, st->stage_ms);
}

const piola_backend_ops piola_opencl_backend = {
    .kind = PIOLA_BACKEND_OPENCL,
    .list_devices = piola_opencl_list_devices,
    .create = piola_opencl_create,
    .destroy = piola_opencl_destroy,
    .lost = piola_opencl_lost,
    .begin_step = piola_opencl_begin_step,
    .stage = piola_opencl_stage,
    .end_step = piola_opencl_end_step,
    .abort_step = piola_opencl_abort_step,
    .finish = piola_opencl_finish,
    .per_body = piola_opencl_per_body,
    .substep_bodies = piola_opencl_substep_bodies,
    .host_current = opencl_host_current,
    .pull = piola_opencl_pull,
    .invalidate = piola_opencl_invalidate,
    .pull_range = piola_opencl_pull_range,
    .push_range = piola_opencl_push_range,
    .push_forces = piola_opencl_push_forces,
    .colliders_changed = piola_opencl_colliders_changed,
    .collider_impulse = piola_opencl_collider_impulse,
    .read_range = piola_opencl_read_range,
    .read_all = piola_opencl_read_all,
    .read_prediction = piola_opencl_read_prediction,
    .contact_counters = opencl_contact_counters,
    .attachments_upload = piola_opencl_attachments_upload,
    .attachments_release = piola_opencl_attachments_release,
    .render_upload = piola_opencl_render_upload,
    .render_compute = piola_opencl_render_compute,
    .render_release = piola_opencl_render_release,
    .describe = opencl_describe,
    .stage_times = piola_opencl_stage_ms,
    .kernel_times = piola_opencl_kernel_times,
};
