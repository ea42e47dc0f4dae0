/* Piola OpenCL backend: the multigrid scheme's SOLVE_GLOBAL stage (newton.c describes the
 * method), run on the host in double between the device's stages. Each iteration reads the
 * vertices' displacements d and support normals from the device, gives the CPU reference's
 * stage what it reads (the positions p = x + d; the support's normal and held motion d.w, in
 * w->solver.support; at the first iteration of a substep the predicted positions y = x + d0, in
 * w->y, and x itself, which stay for the substep), runs piola_cpu_solve_global() on them, and
 * writes d = p - x back with the held motion in d.w: 32 bytes per vertex read and 16 written
 * per iteration, 32 more read per substep. The solve reads and writes p and reads x (the material
 * damping's motion p - x) and the tets' matrices M through the solver arrays: for the call they
 * point at this backend's copies (x and p, and M with the plastic tets' read from the device once
 * per substep, where PLASTICITY changes them), so that the host's w->p, w->x and w->solver.tet_m
 * keep the state before the step until the world is pulled, and a step that fails from the host's
 * state leaves them as they were. Every other stage stays on the device. */
#include "opencl_internal.h"

#include <stdlib.h>
#include <string.h>

piola_status piola_ocl_upload_global(piola_world *w) {
  piola_opencl *cl = piola_ocl(w);
  piola_ocl_release_global(cl);
  if (w->def.iteration_scheme != PIOLA_SCHEME_MULTIGRID) {
    return PIOLA_OK;
  }
  const size_t nv = (size_t)(w->vertex_count > 0 ? w->vertex_count : 1);
  const size_t nt = (size_t)w->solver.tet_count;
  cl->global_x = malloc(sizeof(double) * 3 * nv);
  cl->global_p = malloc(sizeof(double) * 3 * nv);
  cl->global_staging = malloc(sizeof(cl_float4) * 2 * nv);
  const size_t nsv = (size_t)cl->sv_count;
  if (nsv > 0) {
    cl->global_lists = malloc(sizeof(int32_t) * (1 + PIOLA_CONTACTS_PER_VERTEX) * nsv);
  }
  if (w->solver.plastic_count > 0) {
    cl->global_tet_m = malloc(sizeof(double) * 9 * nt);
    cl->global_tet_planes = malloc(sizeof(float) * 9 * nt);
    if (cl->global_tet_m != NULL) {
      memcpy(cl->global_tet_m, w->solver.tet_m, sizeof(double) * 9 * nt);
    }
  }
  if (cl->global_x == NULL || cl->global_p == NULL || cl->global_staging == NULL ||
      (nsv > 0 && cl->global_lists == NULL) ||
      (w->solver.plastic_count > 0 &&
       (cl->global_tet_m == NULL || cl->global_tet_planes == NULL))) {
    piola_ocl_release_global(cl);
    return PIOLA_ERROR_OUT_OF_MEMORY;
  }
  return PIOLA_OK;
}

void piola_ocl_release_global(piola_opencl *cl) {
  free(cl->global_x);
  free(cl->global_p);
  free(cl->global_staging);
  free(cl->global_tet_m);
  free(cl->global_tet_planes);
  free(cl->global_lists);
  cl->global_lists = NULL;
  cl->global_x = NULL;
  cl->global_p = NULL;
  cl->global_staging = NULL;
  cl->global_tet_m = NULL;
  cl->global_tet_planes = NULL;
}

/* The first iteration of a substep: x (BUF_X) into cl->global_x, y = x + d0 (BUF_D0) into w->y,
 * the plastic tets' M (BUF_TET_M, 9 planes of tet_count floats) into cl->global_tet_m and, with
 * contacts, the narrow phase's lists (BUF_CONTACT_COUNT, BUF_CONTACT_TRI) into cl->global_lists. */
static piola_status read_substep(piola_world *w) {
  piola_opencl *cl = piola_ocl(w);
  const int32_t nv = cl->vertex_count;
  cl_float4 *x = cl->global_staging, *d0 = x + nv;
  piola_status s = piola_ocl_read_buffer(w, BUF_X, 0, sizeof(cl_float4) * (size_t)nv, x);
  if (s == PIOLA_OK) {
    s = piola_ocl_read_buffer(w, BUF_D0, 0, sizeof(cl_float4) * (size_t)nv, d0);
  }
  for (int32_t i = 0; i < nv && s == PIOLA_OK; ++i) {
    for (int c = 0; c < 3; ++c) {
      const size_t k = 3 * (size_t)i + (size_t)c;
      cl->global_x[k] = (double)x[i].s[c];
      w->y[k] = (double)x[i].s[c] + (double)d0[i].s[c];
    }
  }
  const size_t nsv = (size_t)cl->sv_count;
  if (s == PIOLA_OK && piola_contacts_active(w) && nsv > 0) {
    s = piola_ocl_read_buffer(w, BUF_CONTACT_COUNT, 0, sizeof(int32_t) * nsv, cl->global_lists);
    if (s == PIOLA_OK) {
      s = piola_ocl_read_buffer(w, BUF_CONTACT_TRI, 0,
                                sizeof(int32_t) * PIOLA_CONTACTS_PER_VERTEX * nsv,
                                cl->global_lists + nsv);
    }
  }
  const size_t nt = (size_t)cl->tet_count, np = (size_t)cl->plastic_count;
  if (s == PIOLA_OK && np > 0) {
    float *planes = cl->global_tet_planes;
    s = piola_ocl_read_buffer(w, BUF_TET_M, 0, sizeof(float) * 9 * nt, planes);
    for (size_t k = 0; k < np && s == PIOLA_OK; ++k) {
      const size_t t = (size_t)w->solver.plastic_tet[k];
      for (size_t j = 0; j < 9; ++j) {
        cl->global_tet_m[9 * t + j] = (double)planes[j * nt + t];
      }
    }
  }
  return s;
}

piola_status piola_ocl_solve_global(piola_world *w, double h) {
  piola_opencl *cl = piola_ocl(w);
  const int32_t nv = cl->vertex_count;
  if (w->def.profile) {
    /* the stage's time on the host, its transfers included, without the kernels before it */
    CL_CHECK(piola_ocl_finish(cl->faults, cl->queue));
  }
  const double t0 = w->def.profile ? piola_now_ms() : 0.0;
  if (nv == 0 || nv != w->vertex_count || w->newton.start == NULL || cl->global_x == NULL) {
    piola_cpu_solve_global(w, h); /* nothing to solve: the stage only starts the step's stats */
    return PIOLA_OK;
  }
  piola_status s = w->iteration == 0 ? read_substep(w) : PIOLA_OK;
  cl_float4 *d = cl->global_staging, *support = d + nv;
  if (s == PIOLA_OK) {
    s = piola_ocl_read_buffer(w, BUF_D, 0, sizeof(cl_float4) * (size_t)nv, d);
  }
  if (s == PIOLA_OK) {
    s = piola_ocl_read_buffer(w, BUF_SUPPORT, 0, sizeof(cl_float4) * (size_t)nv, support);
  }
  if (s != PIOLA_OK) {
    return s;
  }
  const double *x = cl->global_x;
  double *p = cl->global_p;
  for (int32_t i = 0; i < nv; ++i) {
    double *sp = w->solver.support + 4 * (size_t)i;
    for (int c = 0; c < 3; ++c) {
      const size_t k = 3 * (size_t)i + (size_t)c;
      p[k] = x[k] + (double)d[i].s[c];
      sp[c] = (double)support[i].s[c];
    }
    sp[3] = (double)d[i].s[3]; /* the held motion, -1 where free (piola_tet_support) */
    /* the supporting collider (piola_step.cl's support record) */
    w->support_collider[i] = support[i].s[3] >= 0.0f ? (int32_t)support[i].s[3] : -1;
  }
  /* The solve on this backend's x, p and (with plastic tets) M, the host's put back after it. */
  double *host_x = w->x, *host_p = w->p, *host_tet_m = w->solver.tet_m;
  w->x = cl->global_x;
  w->p = p;
  if (cl->global_tet_m != NULL) {
    w->solver.tet_m = cl->global_tet_m;
  }
  const bool lists =
      piola_contacts_active(w) && cl->sv_count > 0 && cl->sv_count == w->contacts.vertex_count;
  piola_newton_solve(w, h, lists ? cl->global_lists : NULL,
                     lists ? cl->global_lists + cl->sv_count : NULL);
  w->x = host_x;
  w->p = host_p;
  w->solver.tet_m = host_tet_m;
  for (int32_t i = 0; i < nv; ++i) {
    for (int c = 0; c < 3; ++c) {
      const size_t k = 3 * (size_t)i + (size_t)c;
      d[i].s[c] = (cl_float)(p[k] - x[k]);
    }
    d[i].s[3] = (cl_float)w->solver.support[4 * (size_t)i + 3];
  }
  s = piola_ocl_write_buffer(w, BUF_D, 0, sizeof(cl_float4) * (size_t)nv, d);
  if (w->def.profile) {
    cl->global_ms += piola_now_ms() - t0;
  }
  return s;
}
