/* Piola internals, all of them: the world's data and every host module's internal header, for
 * the white-box tests and the tools of bench/. The library's own modules include only the
 * headers they use. Not installed; the public story is include/piola/. */
#ifndef PIOLA_INTERNAL_H
#define PIOLA_INTERNAL_H

#include "attachment.h"
#include "backend.h"
#include "body.h"
#include "collider.h"
#include "coloring.h"
#include "common.h"
#include "contact.h"
#include "cpu_reference.h"
#include "id_pool.h"
#include "opencl.h"
#include "render_mesh.h"
#include "solver_arrays.h"
#include "state.h"
#include "thread_pool.h"
#include "vbd.h"
#include "world.h"

#endif /* PIOLA_INTERNAL_H */
