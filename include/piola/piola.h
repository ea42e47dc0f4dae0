/* Piola: position-based simulation of continuous materials on any OpenCL device.
 *
 * The one header a user includes. A world holds bodies (tetrahedral meshes or cloth),
 * kinematic colliders and the solver settings; piola_world_step() advances it by dt with XPBD
 * (Macklin, Mueller, Chentanez 2016) over the continuum energy constraints of Bender,
 * Koschier, Charrier and Weber 2014, "Position-Based Simulation of Continuous Materials".
 *
 * Conventions: every fallible call returns a piola_status and changes nothing when it fails;
 * details go to the world's logger. Arrays of points are packed xyz floats in metres, in the
 * vertex order of the mesh the body was made from. The library never exits, aborts in release
 * builds or prints by itself, and holds no global state: worlds are independent.
 *
 * Threads: different worlds may be used from different threads at once; one world must be used
 * by one thread at a time (calls on the same world must not overlap).
 */
#ifndef PIOLA_H
#define PIOLA_H

#include "piola_base.h"
#include "piola_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Status ------------------------------------------------------------------------- */

/** A short English description of a status ("invalid mesh", ...); never NULL. */
PIOLA_API const char *piola_status_string(piola_status status);

/** The name of a stage of the step ("solve_tets", ...); never NULL. */
PIOLA_API const char *piola_stage_name(piola_stage stage);

/** The name of a backend ("cpu", "opencl", "auto"); never NULL. */
PIOLA_API const char *piola_backend_name(piola_backend backend);

/* ---- Defaults ----------------------------------------------------------------------- */

/** Gravity (0, -9.81, 0) m/s^2, dt 0.005 s, 1 substep, 5 iterations, no damping,
 * backend PIOLA_BACKEND_AUTO (the best OpenCL device, else the CPU reference). */
PIOLA_API piola_world_def piola_default_world_def(void);

/** Saint Venant-Kirchhoff, XPBD, E = 1e5 Pa, nu = 0.3, 1000 kg/m^3, inversion handling on,
 * plasticity off (yield 0.1, creep 0, max 0.3). */
PIOLA_API piola_material piola_default_material(void);

/** Cloth: 0.2 kg/m^2, stretch 1000 N/m along weft and warp, shear 100 N/m, poisson_weft 0.3,
 * bending stiffness D = 1e-4 N m, XPBD. */
PIOLA_API piola_cloth_material piola_default_cloth_material(void);

/** A plane y = 0 with normal +y, static friction 0.5, dynamic friction 0.4. */
PIOLA_API piola_collider_def piola_default_collider_def(void);

/* ---- World -------------------------------------------------------------------------- */

typedef struct piola_world piola_world;

/** Creates a world. On failure *out is NULL and nothing is allocated. With an OpenCL backend
 * this picks the device and builds the kernels (PIOLA_ERROR_NO_DEVICE, _BUILD_FAILED). */
PIOLA_API piola_status piola_world_create(const piola_world_def *def, piola_world **out);

/** Destroys a world and everything in it, host and device. NULL is allowed. */
PIOLA_API void piola_world_destroy(piola_world *world);

/** Advances the world by dt (def.substeps substeps of def.iterations iterations each).
 * With OpenCL the work is queued and this returns without waiting; piola_world_finish() or any
 * read-back waits for it. */
PIOLA_API piola_status piola_world_step(piola_world *world);

/** Waits until every queued step has finished on the device (no-op on the CPU reference). */
PIOLA_API piola_status piola_world_finish(piola_world *world);

/** Changes the iteration count (>= 1) used from the next step on. */
PIOLA_API piola_status piola_world_set_iterations(piola_world *world, int32_t iterations);

/** Changes gravity (m/s^2) from the next step on. */
PIOLA_API piola_status piola_world_set_gravity(piola_world *world, const float gravity[3]);

/** Fills *out (see piola_stats). Evaluates energies from the current state, which reads it
 * back from the device: call it when needed, not every frame. */
PIOLA_API piola_status piola_world_get_stats(const piola_world *world, piola_stats *out);

/** Time per stage of the last step, ms: host time on the CPU reference, device time from
 * profiling events on OpenCL with def.profile on (zeros otherwise; SOLVE_GLOBAL, which runs on
 * the host there, is its host time with its transfers). Cheap: no read-back. */
PIOLA_API piola_status piola_world_get_stage_times(const piola_world *world,
                                                   double stage_ms[PIOLA_STAGE_COUNT]);

/** Device time per OpenCL kernel of the last step, from the same profiling events as the stage
 * times (def.profile on): every kernel of the world's programs, launched or not, in an order
 * that stays the same for the world, so that calls after successive steps can be summed entry
 * by entry. Writes min(capacity, count) entries and stores count in *count (either pointer may
 * be NULL). On the CPU reference count is 0; with profiling off every entry is 0 launches and 0
 * ms. */
PIOLA_API piola_status piola_world_get_kernel_times(const piola_world *world,
                                                    piola_kernel_time *times, int32_t capacity,
                                                    int32_t *count);

/** The colors' sizes (tets per color, in solve order). Writes min(capacity, color_count)
 * entries and stores color_count in *color_count (either pointer may be NULL). */
PIOLA_API piola_status piola_world_get_color_sizes(const piola_world *world, int32_t *sizes,
                                                   int32_t capacity, int32_t *color_count);

/* ---- State -------------------------------------------------------------------------- */

/** The size in bytes of the world's saved state (piola_world_save_state()), which depends on
 * the scene and the iteration scheme only: it changes when bodies, colliders or attachments are
 * added or removed. */
PIOLA_API piola_status piola_world_get_state_size(const piola_world *world, size_t *bytes);

/** Saves everything a step carries to the next one into `buffer` (at least
 * piola_world_get_state_size() bytes; the rest of a larger buffer is left alone), so that
 * piola_world_load_state() can put the world, or another world of the same scene, back where it
 * was: reset, rollback, replay, and a cross-check that loads one backend's state into another's
 * world every step.
 *
 * Saved: per vertex its position (m), velocity (m/s), external force (N) and inverse mass (1/kg);
 * per plastic tet its plastic strain and its effective M = Dm^-1 F_p^-1 (1/m); per surface vertex
 * the contacts of the last substep (those that persist into the next one); each collider's pose at
 * the start of the next step and its velocities; each attachment's target (m); under the multigrid
 * scheme, per vertex where its collider's friction holds it (its anchor, m) and the normal force it
 * last pressed with (N); the step count and the simulated time (s). Not saved: the scene (bodies,
 * rest shapes, materials, filters, colliders' shapes, attachments' compliances, render meshes) and
 * the settings (the world def, gravity, iterations), nor the statistics of the last step.
 *
 * Format (version 1), little-endian, integers in two's complement, reals as IEEE 754 doubles (so
 * the CPU reference's state is saved exactly and an OpenCL world's floats are held exactly). A
 * header of 80 bytes: at 0 the magic "PIOLAST" and a zero byte; 8 u32 format version (1); 12 u32
 * header size (80); 16 u64 size of the state; the counts that define the scene's shape, i32 each:
 * 24 bodies, 28 vertices, 32 tets, 36 plastic tets, 40 surface vertices, 44 surface triangles, 48
 * colliders, 52 attachments, 56 contacts per vertex (8); 60 u32 flags (bit 0: the world has
 * external forces; bit 1: the friction section follows; bit 2: the contact forces section
 * follows); 64 i64 step count; 72 f64 simulated time
 * (s). Then fixed-size records, section after section: per vertex (world order: the bodies'
 * vertices in the order the bodies were added) 80 bytes, position[3], velocity[3], force[3],
 * inverse mass; per plastic tet (the live plastic tet bodies in the order added, each body's tets
 * in its mesh's order) 120 bytes, M[9] row by row and plastic strain[6] (xx, yy, zz, xy, xz, yz);
 * per surface vertex (the solver's order, internal but the same for worlds of one scene) 36 bytes,
 * i32 count and 8 i32 entries 2 t + side (t a surface triangle, side 1 where a two-sided triangle
 * acts reversed; -1 past the count); per collider (the order they act in) 112 bytes, u32 type
 * (piola_collider_type), u32 0, position[3], rotation[4] (x, y, z, w), velocity[3], angular
 * velocity[3]; per live attachment (the order added) 32 bytes, i32 body slot, i32 vertex
 * (body-local), target[3]; with flag bit 1 (a world of the multigrid scheme saved it) per vertex
 * (world order) 40 bytes, i32 the collider whose friction holds it (-1: none), u32 0, anchor[3],
 * normal force; with flag bit 2 (a world of the multigrid scheme with contacts on saved it) per
 * surface vertex (the solver's order) 8 records of 16 bytes, one per slot of its contact list,
 * i32 the entry the slot last named in the solve (-1: none), u32 0, the normal force that contact
 * pressed with at the end of the last substep (N). A world of another scheme skips these
 * sections; a multigrid world loading a state without them starts with no vertex held and no
 * contact force known. With OpenCL this waits for the queued steps and reads the
 * state back. PIOLA_ERROR_INVALID_ARGUMENT for a NULL or too small buffer (nothing is written). */
PIOLA_API piola_status piola_world_save_state(piola_world *world, void *buffer, size_t bytes);

/** Loads a state saved by piola_world_save_state() from a world of the same scene: the same
 * bodies, colliders and attachments added in the same order (on the same backend or another;
 * the settings may differ). Stepping then goes on as the saved world would have: bitwise the
 * same on one backend. Loaded into an OpenCL world, a state saved from the CPU reference steps
 * from its values rounded to floats (the OpenCL step from that state); the next step uploads
 * the whole state to the device. The statistics read before the next step report the loaded
 * state (no constraint active, the contacts loaded, none dropped).
 *
 * The whole buffer is checked before anything changes; on failure the world is unchanged and
 * the reason goes to the logger: PIOLA_ERROR_INVALID_ARGUMENT for a NULL buffer, fewer bytes than
 * the state, a wrong magic, another format version, unknown flags, a negative step count or
 * inverse mass, contact lists that name no triangle, a collider of another type or an
 * attachment on another vertex than the world's, friction records that name no collider or
 * have a negative normal force, or contact force records that name no triangle or have a
 * negative force; PIOLA_ERROR_COUNT_MISMATCH when a count of the
 * header differs from the world's (a state of another scene); PIOLA_ERROR_NON_FINITE for a
 * non-finite value. */
PIOLA_API piola_status piola_world_load_state(piola_world *world, const void *buffer, size_t bytes);

/** The world's collision surface in the numbering of the saved state's contact section
 * (piola_world_save_state()), so that its contact lists can be read: surface vertex i is world
 * vertex world_vertex[i] (the index of its record in the state's vertex section: the bodies'
 * vertices in the order the bodies were added), and surface triangle t has the surface vertices
 * triangles[3 t .. 3 t + 2] (counter-clockwise seen from outside; a cloth triangle as in its
 * mesh). With world_vertex and triangles both NULL it writes the counts only; otherwise
 * *vertex_count and *triangle_count give the room of the arrays passed (either may be NULL) and
 * receive the counts. The numbering is the solver's and changes when bodies are added or
 * removed; it is the same in every world of one scene, on any backend. PIOLA_ERROR_COUNT_MISMATCH
 * (nothing written) where an array is too small. */
PIOLA_API piola_status piola_world_get_collision_surface(piola_world *world, int32_t *vertex_count,
                                                         int32_t *triangle_count,
                                                         int32_t *world_vertex, int32_t *triangles);

/* ---- Bodies ------------------------------------------------------------------------- */

/** Adds a tetrahedral body made of `mesh` (copied; the caller keeps it), translated by
 * `translation` (m, may be NULL). Masses are lumped: each tet gives density * V / 4 to each
 * of its vertices. Tets with negative rest volume are reoriented (reported to the logger);
 * out-of-range or repeated indices, near-zero volumes, non-finite positions and invalid
 * materials are rejected, leaving the world as it was. So are vertices (translated) farther than
 * PIOLA_POSITION_LIMIT from the origin on an axis and vertices whose lumped mass has an inverse
 * outside the normal floats (tets too small, or too heavy, for the density):
 * PIOLA_ERROR_INVALID_MESH. A material with one constraint per tet (PIOLA_SOLVER_PBD, or
 * PIOLA_SPLIT_NONE) and nu >= 0.4 is accepted with a warning to the logger: that projection
 * overshoots the volume mode and the body can tear apart (positions stay finite). `out` may be
 * NULL. */
PIOLA_API piola_status piola_world_add_tet_body(piola_world *world, const piola_tet_mesh *mesh,
                                                const piola_material *material,
                                                const float translation[3], piola_body_id *out);

/** Adds a cloth body made of the triangle mesh `mesh` (copied), translated by `translation` (m,
 * may be NULL). Its rest shape is the mesh as given (flat or curved). Each triangle becomes a
 * membrane constraint; each interior edge (shared by exactly two triangles) a bending stencil.
 * Masses are lumped: each triangle gives density * area / 3 to each of its corners. The weft of
 * a triangle is along increasing u when the mesh has uvs (where u is constant on a triangle,
 * and without uvs, along its first edge x1 - x0). Rejected with PIOLA_ERROR_INVALID_MESH (the
 * reason to the logger): fewer than 3 vertices or no triangle, indices out of range or
 * repeated within a triangle, degenerate (near-zero area) triangles, edges shared by more than
 * two triangles (non-manifold), hinges folded flat onto themselves; PIOLA_ERROR_NON_FINITE for
 * non-finite positions, uvs or translation; PIOLA_ERROR_INVALID_MATERIAL (or _INVALID_DEF
 * without the cookie) for a bad material. On failure the world is unchanged. A cloth collides
 * with colliders, with bodies and with itself: its triangles are its collision surface,
 * two-sided (a vertex is kept on the side it came from). `out` may be NULL. */
PIOLA_API piola_status piola_world_add_cloth(piola_world *world, const piola_tri_mesh *mesh,
                                             const piola_cloth_material *material,
                                             const float translation[3], piola_body_id *out);

/** Removes a body; its id and copies of it go stale. */
PIOLA_API piola_status piola_world_remove_body(piola_world *world, piola_body_id body);

/** Whether `body` names a body of this world. */
PIOLA_API bool piola_body_is_valid(const piola_world *world, piola_body_id body);

/** The number of vertices of a body (its mesh's vertex count), or -1 for an invalid id. */
PIOLA_API int32_t piola_body_get_vertex_count(const piola_world *world, piola_body_id body);

/** Sets inverse masses (1/kg) per vertex; 0 pins a vertex (it keeps its position, and
 * piola_body_set_positions() moves it kinematically). `count` must be the vertex count.
 * Negative or non-finite values are rejected. */
PIOLA_API piola_status piola_body_set_inverse_masses(piola_world *world, piola_body_id body,
                                                     const float *inverse_masses, int32_t count);

/** Reads inverse masses (1/kg) per vertex. */
PIOLA_API piola_status piola_body_get_inverse_masses(const piola_world *world, piola_body_id body,
                                                     float *inverse_masses, int32_t count);

/** Teleports vertices (m; 3 floats per vertex, count = vertex count), e.g. to start from a
 * deformed state. Velocities are kept. */
PIOLA_API piola_status piola_body_set_positions(piola_world *world, piola_body_id body,
                                                const float *xyz, int32_t count);

/** Sets velocities (m/s; 3 floats per vertex, count = vertex count). */
PIOLA_API piola_status piola_body_set_velocities(piola_world *world, piola_body_id body,
                                                 const float *xyz, int32_t count);

/** Sets a constant external force per vertex (N; 3 floats per vertex, count = vertex count),
 * applied every substep (v += h f / m) until changed; NULL clears the body's forces. Forces
 * on pinned vertices have no effect. */
PIOLA_API piola_status piola_body_set_forces(piola_world *world, piola_body_id body,
                                             const float *xyz, int32_t count);

/** Reads positions (m; 3 floats per vertex, count = vertex count). */
PIOLA_API piola_status piola_body_get_positions(const piola_world *world, piola_body_id body,
                                                float *xyz, int32_t count);

/** Reads velocities (m/s; 3 floats per vertex, count = vertex count). */
PIOLA_API piola_status piola_body_get_velocities(const piola_world *world, piola_body_id body,
                                                 float *xyz, int32_t count);

/** Chooses which bodies this one collides with: bodies A and B collide when A's group has a
 * bit in B's mask and B's group has a bit in A's mask. Default: group 1, mask 0xFFFFFFFF
 * (everything collides). Self-collision is set separately. */
PIOLA_API piola_status piola_body_set_collision_filter(piola_world *world, piola_body_id body,
                                                       uint32_t group, uint32_t mask);

/** Turns collisions of a body with itself on or off (default on): a surface vertex against a
 * surface triangle of its own body that does not contain it and that was, in the rest shape,
 * at least 2 * contact_thickness away from it and farther than the vertex's longest tet edge
 * (nearer pairs are the elastic solve's to keep apart: a contact between them would hold an
 * inverted tet inverted). */
PIOLA_API piola_status piola_body_set_self_collision(piola_world *world, piola_body_id body,
                                                     bool enabled);

/** For a cloth body: its triangles (as in its mesh), its two-sided collision surface. For a
 * tet body: the body's collision surface: its boundary triangles (faces of
 * exactly one tet), oriented with outward normals (counter-clockwise seen from outside), 3
 * body-local vertex indices each. Writes min(capacity, count) triangles and stores the count in
 * *count (either pointer may be NULL when capacity is 0). */
PIOLA_API piola_status piola_body_get_surface(const piola_world *world, piola_body_id body,
                                              int32_t *triangles, int32_t capacity, int32_t *count);

/** The body-local indices of the vertices on the body's collision surface, ascending. Writes
 * min(capacity, count) indices and stores the count in *count (either pointer may be NULL when
 * capacity is 0). A render mesh made of these vertices' rest positions
 * (piola_body_attach_render_mesh) reads back just them, computed on the device. */
PIOLA_API piola_status piola_body_get_surface_vertices(const piola_world *world, piola_body_id body,
                                                       int32_t *vertices, int32_t capacity,
                                                       int32_t *count);

/* ---- Attachments -------------------------------------------------------------------- */

/** Attaches vertex `vertex` (body-local) of a body to the point `target` (m) with compliance
 * `compliance` (m/N; 0 = hard): an XPBD distance constraint projected in every iteration after
 * the constraints and contacts, before the colliders, so the vertex is pulled towards the
 * target with a force of about distance / compliance (a hard one sits on it). The grab of an
 * engine: move the target every frame with piola_attachment_set_target(). A vertex may have
 * several attachments (projected in the order they were added). A pinned vertex (inverse mass
 * 0) does not move. `out` receives the id. An attachment whose body is removed stops acting;
 * piola_world_remove_attachment() frees it. */
PIOLA_API piola_status piola_world_add_attachment(piola_world *world, piola_body_id body,
                                                  int32_t vertex, const float target[3],
                                                  float compliance, piola_attachment_id *out);

/** Moves an attachment's target (m), from the next step on. */
PIOLA_API piola_status piola_attachment_set_target(piola_world *world, piola_attachment_id id,
                                                   const float target[3]);

/** Removes an attachment; its id goes stale. */
PIOLA_API piola_status piola_world_remove_attachment(piola_world *world, piola_attachment_id id);

/* ---- Render meshes ------------------------------------------------------------------ */

/** Embeds `count` detail vertices (xyz: 3 floats each, m, in world coordinates over the body
 * as it is now, usually its rest shape) into the body's collision surface, after the paper's
 * Sec. 5 (Kobbelt et al. 1999): each gets a surface triangle, the barycentric coordinates of
 * its base point and its offset along the surface's interpolated vertex normal, chosen once
 * here (among the 8 nearest triangles, the nearest whose normal field reaches the point; a
 * point no normal field reaches keeps its nearest triangle's closest point, and is reproduced
 * at rest with a lateral error). piola_render_mesh_get_positions() and _get_normals() then give
 * the detail vertices over the deformed surface. Cost: O(count x surface triangles), once.
 * `out` receives the id. Rejects non-finite points (PIOLA_ERROR_NON_FINITE) and count < 1. */
PIOLA_API piola_status piola_body_attach_render_mesh(piola_world *world, piola_body_id body,
                                                     const float *xyz, int32_t count,
                                                     piola_render_mesh_id *out);

/** The deformed detail vertices (3 floats each, m): computed on the device on the OpenCL
 * backend (two launches and one read-back of `count` vertices), on the host on the CPU
 * reference. count must be the render mesh's. PIOLA_ERROR_INVALID_BODY once its body is
 * removed. */
PIOLA_API piola_status piola_render_mesh_get_positions(const piola_world *world,
                                                       piola_render_mesh_id mesh, float *xyz,
                                                       int32_t count);

/** The unit normals of the deformed detail vertices (3 floats each): the interpolated surface
 * normal each is offset along. As piola_render_mesh_get_positions(). */
PIOLA_API piola_status piola_render_mesh_get_normals(const piola_world *world,
                                                     piola_render_mesh_id mesh, float *xyz,
                                                     int32_t count);

/** Removes a render mesh (also after its body was removed); its id goes stale. */
PIOLA_API piola_status piola_world_remove_render_mesh(piola_world *world,
                                                      piola_render_mesh_id mesh);

/* ---- Colliders ---------------------------------------------------------------------- */

/** Adds a collider at the identity pose (its shape's coordinates are world coordinates, at
 * rest, until piola_world_set_collider_pose() moves it). Rejects non-finite values,
 * non-positive sizes, a zero normal or axis, negative friction. `out` (may be NULL) receives
 * its id. Colliders act on the particles in the order they were added. */
PIOLA_API piola_status piola_world_add_collider(piola_world *world, const piola_collider_def *def,
                                                piola_collider_id *out);

/** Adds the half-space dot(normal, x) < offset (offset in m) as solid ground, with one friction
 * coefficient used for both static and dynamic friction. `out` (may be NULL) receives its id. */
PIOLA_API piola_status piola_world_add_plane(piola_world *world, const float normal[3],
                                             float offset, float friction, piola_collider_id *out);

/** Removes a collider; its id and copies of it go stale, and bodies no longer meet it from the
 * next step on. The other colliders keep their ids and order. */
PIOLA_API piola_status piola_world_remove_collider(piola_world *world, piola_collider_id id);

/** Moves a collider kinematically (any type): sets its pose at the start of the next step and
 * its velocities over the steps that follow.
 *
 * `position` (m) is where the origin of the collider's own frame (the frame its def's shape is
 * given in) lies in the world; `rotation` is the unit quaternion (x, y, z, w), w the scalar
 * part, that turns the collider's frame into the world's: a shape point s is at
 * position + R(rotation) s. The quaternion is normalised; a zero or non-finite one is rejected.
 * The identity pose (position 0, rotation (0, 0, 0, 1), velocities 0) is the collider as added.
 * `linear_velocity` (m/s) is the velocity of the frame's origin and `angular_velocity` (rad/s,
 * world axes) the rotation about it.
 *
 * During piola_world_step() the collider moves along its velocities: t seconds after the
 * step's start it is at position + linear_velocity t, turned by |angular_velocity| t about
 * angular_velocity's direction (through its origin) after `rotation`. Each substep (of h =
 * dt / substeps) meets particles with the collider at its pose at the end of that substep,
 * and friction acts on a particle's motion relative to the collider's surface point, whose
 * velocity is linear_velocity + angular_velocity x (p - origin), so a moving plate carries what
 * rests on it. After the step the collider keeps the advanced pose and its velocities (it
 * keeps moving until they are changed): an engine may set the velocities once and let the
 * pose follow, or set the pose every frame with the velocities that lead to the next frame's
 * pose ((next - current) / dt). Setting a pose that jumps without matching velocities
 * teleports the collider: particles it lands on are pushed out, without that motion for
 * friction. All vectors must be non-NULL and finite; on failure nothing changes. */
PIOLA_API piola_status piola_world_set_collider_pose(piola_world *world, piola_collider_id id,
                                                     const float position[3],
                                                     const float rotation[4],
                                                     const float linear_velocity[3],
                                                     const float angular_velocity[3]);

/** Reads a collider's pose at the start of the next step and its velocities, in the units and
 * conventions of piola_world_set_collider_pose() (rotation normalised). Any output may be
 * NULL. */
PIOLA_API piola_status piola_world_get_collider_pose(const piola_world *world, piola_collider_id id,
                                                     float position[3], float rotation[4],
                                                     float linear_velocity[3],
                                                     float angular_velocity[3]);

/** Reads what the particles did to a collider in the last step: `force` (N, world axes) and
 * `torque` (N m, world axes, about the collider's position, the origin of its frame), both
 * averaged over the step. They are the normal and friction impulses the collider applied to the
 * particles (the mass times each position correction it made, over the substep h), with the
 * opposite sign, summed over the step's substeps and divided by dt; a moment is taken about
 * where the origin stood at the end of its substep. A body resting on a collider weighs on it
 * with m g. With it an engine couples its rigid bodies both ways: it applies the force and
 * torque to its body and moves the collider to the body's new pose each frame
 * (piola_world_set_collider_pose()). Zeros before the first step, and after a collider was
 * added or removed or a state loaded, until the next step. Either output may be NULL. On
 * OpenCL the sums are made on the device in a fixed order (no atomics) and 32 bytes are read
 * back: the same figures in every run. */
PIOLA_API piola_status piola_world_get_collider_force(const piola_world *world,
                                                      piola_collider_id id, float force[3],
                                                      float torque[3]);

/** Makes a signed distance field (for a PIOLA_COLLIDER_SDF) from a closed, outward-oriented
 * triangle mesh (as piola_mesh_shape describes it): the grid covers the mesh's bounding box grown
 * by `padding` (m, >= 0) on every side with points `cell` (m, > 0) apart, each holding its
 * distance to the surface (negative inside; exact at the points, Baerentzen and Aanaes 2005's
 * sign). On success *out describes the grid and its distances, which the library allocated:
 * free them with piola_sdf_free() (after the collider is added, which copies them, or when done).
 * PIOLA_ERROR_INVALID_MESH for a bad or open mesh, PIOLA_ERROR_NON_FINITE for non-finite
 * values, PIOLA_ERROR_INVALID_ARGUMENT for NULL pointers, a bad cell or padding or a grid of more
 * than 2^26 points; *out is untouched on failure. Costs a nearest-triangle query per point. */
PIOLA_API piola_status piola_sdf_from_mesh(const piola_mesh_shape *mesh, float cell, float padding,
                                           piola_sdf_shape *out);

/** Frees the distances piola_sdf_from_mesh() allocated and zeroes *sdf (NULL: nothing). */
PIOLA_API void piola_sdf_free(piola_sdf_shape *sdf);

/* ---- Meshes ------------------------------------------------------------------------- */

/** Loads a TetGen .node/.ele pair (0- or 1-based; attributes and boundary markers ignored;
 * 4-node tets only). Malformed or truncated files return PIOLA_ERROR_PARSE, non-finite
 * coordinates PIOLA_ERROR_NON_FINITE, out-of-range or repeated indices PIOLA_ERROR_INVALID_MESH,
 * 10-node tets PIOLA_ERROR_UNSUPPORTED, unreadable files PIOLA_ERROR_IO; the message with the
 * file and line number goes to `logger` (may be NULL). *out is untouched on failure. */
PIOLA_API piola_status piola_mesh_load_tetgen_logged(const char *node_path, const char *ele_path,
                                                     const piola_logger *logger,
                                                     piola_tet_mesh *out);

/** piola_mesh_load_tetgen_logged() without a logger. */
PIOLA_API piola_status piola_mesh_load_tetgen(const char *node_path, const char *ele_path,
                                              piola_tet_mesh *out);

/** Loads the tetrahedra of a Gmsh .msh file, ASCII format 2.2 or 4.1 (as written by
 * `gmsh -3 -format msh41` or `-format msh22`). 4-node tets (element type 4) are kept;
 * 10-node tets (type 11) contribute their 4 corner nodes; points, lines, triangles and other
 * elements are ignored (other volume elements with a warning to `logger`); physical groups,
 * entities, partitions and unknown sections are skipped. The nodes used by tets are numbered
 * 0, 1, ... in ascending tag order (tags may be sparse and unordered); nodes in no tet are
 * dropped. Tets keep Gmsh's corner order, which is Piola's positive orientation. Malformed or
 * truncated files, missing $End markers and unknown node tags return PIOLA_ERROR_PARSE,
 * non-finite coordinates PIOLA_ERROR_NON_FINITE, a tet using a node twice or a file without
 * tets PIOLA_ERROR_INVALID_MESH, binary files and other format versions
 * PIOLA_ERROR_UNSUPPORTED, unreadable files PIOLA_ERROR_IO; the message with the file and line
 * number goes to `logger` (may be NULL). *out is untouched on failure. */
PIOLA_API piola_status piola_mesh_load_gmsh_logged(const char *path, const piola_logger *logger,
                                                   piola_tet_mesh *out);

/** piola_mesh_load_gmsh_logged() without a logger. */
PIOLA_API piola_status piola_mesh_load_gmsh(const char *path, piola_tet_mesh *out);

/** Writes a mesh as a TetGen .node/.ele pair (0-based). */
PIOLA_API piola_status piola_mesh_save_tetgen(const piola_tet_mesh *mesh, const char *node_path,
                                              const char *ele_path);

/** A box of cells[0] x cells[1] x cells[2] cubes, each split into 6 tets sharing the main
 * diagonal (conforming), spanning [0, size] on each axis (m), with (0,0,0) at a corner. */
PIOLA_API piola_status piola_mesh_make_box(const int32_t cells[3], const float size[3],
                                           piola_tet_mesh *out);

/** A procedural creature: a voxelised body with head, arms, legs and tail, about `height` m
 * tall, of about 1200 vertices and 3700 tets, similar in size to the Armadillo of Bender et
 * al. 2014. Its lowest point is at y = 0, centred on x = z = 0. */
PIOLA_API piola_status piola_mesh_make_creature(float height, piola_tet_mesh *out);

/** Frees arrays allocated by the loaders and generators, and zeroes the struct. */
PIOLA_API void piola_mesh_free(piola_tet_mesh *mesh);

/** A flat rectangle of cells[0] x cells[1] squares for cloth, in the x-z plane at y = 0,
 * spanning [0, size[0]] on x and [0, size[1]] on z (m) with (0, 0, 0) at a corner, as
 * piola_mesh_make_box() places its box. (cells[0] + 1) * (cells[1] + 1) vertices in grid order
 * (x fastest, then z); 2 * cells[0] * cells[1] triangles in square order, two per square, all
 * with normal +y; uvs u = x / size[0] and v = z / size[1], both in [0, 1] (u is the weft
 * direction). The diagonals alternate in a checkerboard, so the grid has no preferred shear
 * direction: square (i, k) (i along x, k along z) is split along the diagonal from its corner
 * (i, k) to (i + 1, k + 1) when i + k is even and from (i + 1, k) to (i, k + 1) when it is odd.
 * NULL pointers, cells < 1, sizes <= 0 and counts of 2^30 or more give
 * PIOLA_ERROR_INVALID_ARGUMENT, non-finite sizes PIOLA_ERROR_NON_FINITE, as in
 * piola_mesh_make_box(); *out is untouched on failure. */
PIOLA_API piola_status piola_mesh_make_grid(const int32_t cells[2], const float size[2],
                                            piola_tri_mesh *out);

/** Loads a Wavefront OBJ file as a triangle mesh. Read: `v x y z [w]` (w, or the colour of
 * `v x y z r g b`, checked for being numbers and dropped), `vt u [v [w]]` (v defaults to 0),
 * and `f` whose corners are `i`, `i/t`, `i//n` or `i/t/n`, numbered from 1, or negative to
 * count back from the last element defined before the face (-1 is the last). A face of more
 * than 3 corners becomes a fan of triangles from its first corner (right for convex polygons),
 * in the file's winding. Every other statement (vn, o, g, s, usemtl, mtllib, l, p, curves) is
 * ignored; '#' starts a comment; blank lines, CRLF line ends and lines of up to 16 MiB are
 * fine; numbers are read with '.' as the decimal point whatever the C locale is.
 *
 * Vertex i of the result is the position of the (i + 1)-th `v` line, used by a face or not.
 * OBJ numbers positions and texture coordinates separately, the result has one uv per vertex:
 * where faces use a position with different `vt`s (a seam), the vertex is split, and its
 * copies (same position, other uv) follow the `v` vertices in the order faces first use them,
 * so vertex_count may exceed the number of `v` lines. Either every face has texture
 * coordinates or none has; with none, uvs is NULL; vertices no face uses get uv (0, 0).
 *
 * Errors, as piola_mesh_load_tetgen_logged() reports them: one message "path:line: what" to
 * `logger` (may be NULL), and *out untouched. An unreadable file is PIOLA_ERROR_IO; a malformed
 * statement or number, an index 0, a face of fewer than 3 corners, or faces with and without
 * texture coordinates in one file PIOLA_ERROR_PARSE; a non-finite coordinate (or one beyond
 * float) PIOLA_ERROR_NON_FINITE; an index out of range (elements must be defined before the
 * face that uses them), a triangle of the fan that uses one position twice, or a file without
 * faces PIOLA_ERROR_INVALID_MESH. Triangles of zero area with three distinct positions are
 * kept, as the TetGen loader keeps flat tets (the user of the mesh checks its geometry). */
PIOLA_API piola_status piola_mesh_load_obj_logged(const char *path, const piola_logger *logger,
                                                  piola_tri_mesh *out);

/** piola_mesh_load_obj_logged() without a logger. */
PIOLA_API piola_status piola_mesh_load_obj(const char *path, piola_tri_mesh *out);

/** Frees arrays allocated by piola_mesh_load_obj() and piola_mesh_make_grid(), and zeroes the
 * struct. NULL is allowed. */
PIOLA_API void piola_tri_mesh_free(piola_tri_mesh *mesh);

/* ---- OpenCL devices ----------------------------------------------------------------- */

/** One OpenCL device as reported by its driver. */
typedef struct piola_device_info {
  int32_t platform_index;
  int32_t device_index;
  char platform_name[128];
  char name[128];
  char vendor[128];
  char version[64]; /**< OpenCL C version the device compiles */
  char type[16];    /**< "gpu", "cpu", "accelerator" or "other" */
  int32_t compute_units;
  int64_t global_memory_bytes;
  int32_t max_work_group_size;
  bool fp64; /**< double precision support */
} piola_device_info;

/** Lists OpenCL devices: writes min(capacity, count) entries to `devices` (may be NULL) and
 * the number found to *count. With no OpenCL runtime, or a build without OpenCL, *count is 0
 * and PIOLA_OK is returned. */
PIOLA_API piola_status piola_list_devices(piola_device_info *devices, int32_t capacity,
                                          int32_t *count);

#ifdef __cplusplus
}
#endif

#endif /* PIOLA_H */
