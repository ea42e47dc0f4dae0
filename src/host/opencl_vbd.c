/* Piola OpenCL backend: vertex block descent's SOLVE_VERTICES stage (vbd.c has the method). */
#include "opencl_internal.h"

piola_status piola_ocl_solve_vertices(piola_world *w, double h) {
  (void)h;
  piola_log(&w->def.logger, PIOLA_LOG_ERROR, "vertex block descent is not yet on OpenCL");
  return PIOLA_ERROR_UNSUPPORTED;
}
