/* sim/crossmesh private — what the crossmesh .c files share: the plan's layout, the expansion of
 * a unit into steps (transfers and collectives), the load balancers.
 *
 * Host-level model of the load balancers (paper §3.2): unit i, sent from candidate host k,
 * occupies that host's sending side and the receiving side of every host in m_i (its receiver
 * hosts) for T_ik seconds. The engine-level tasks hold finer resources (streams, GPU ports, every
 * NIC of a host: sim_crossmesh_steps.c). */
#ifndef STRATSIM_SIM_CROSSMESH_INT_H
#define STRATSIM_SIM_CROSSMESH_INT_H

#include "costmodel/cm_nccl.h"
#include "sim/sim_crossmesh.h"

typedef struct {
  SimCrossMeshUnit pub;     /* first member: the public view */
  int *holders;             /* owned arrays behind pub's pointers */
  int *receivers;
  int *receiver_index;      /* destination mesh index of each receiver */
  int *holder_index;        /* source mesh index of each holder */
  int ncand;                /* candidate sender hosts (hosts of the holders), ascending */
  int *cand_host;
  double *cand_seconds;     /* T_ik: the unit alone sent from the lowest holder on host k */
  double min_seconds;       /* min over k of T_ik */
  int *recv_hosts;          /* m_i, ascending */
  int nrecv_hosts;
  int choice;               /* chosen candidate (index into cand_host) */
  int cls;                  /* units with the same candidates, T and m_i share a class */
} CmxUnit;

struct SimCrossMeshPlan {
  SimCrossMeshOptions options;
  int num_devices;
  int nodes;
  int gpus_per_node;
  int nics_per_node;
  CmLinkCost intra;         /* cm_group_link of a group inside one host */
  CmLinkCost nic;           /* cm_group_link of two whole hosts: all NICs of a host, striped,
                               over the fabric's oversubscription */
  CmNcclHardware nccl;      /* NCCL's view of the cluster: all-gathers are priced by the one
                               collective model (costmodel/cm_tuner.h) */
  int ndims;
  int64_t shape[MDL_MAX_DIMS];
  double elem_bytes;
  int src_ndevices, dst_ndevices;
  int *src_devices, *dst_devices;  /* cluster ids in mesh order */
  int *dst_local;           /* per destination mesh index: its source mesh index where it
                               copies part of its tile locally, else -1 */
  int nunits;
  CmxUnit *units;
  uint32_t *order;
  double cost;              /* Eq. 1 */
  int nclasses;
};

static inline int cmx_host(const SimCrossMeshPlan *p, int device) { return device / p->gpus_per_node; }

/* Steps: what one unit expands to. */
typedef enum { CMX_STEP_P2P, CMX_STEP_ALL_GATHER, CMX_STEP_BROADCAST } CmxStepKind;

typedef struct {
  CmxStepKind kind;
  int member_begin;         /* into the members array: P2P {src, dst}; all-gather the group;
                               broadcast the chain, sender first */
  int nmembers;
  int dep_begin, ndeps;     /* steps of the same unit it waits for (a contiguous run) */
  gboolean delivers;        /* its receiving members hold the slice when it ends */
  double bytes;             /* per-device bytes: the message, or the all-gather's output */
  double seconds;
} CmxStep;

/* Appends the steps of unit @u sent by device @sender under the plan's method to @steps
 * (CmxStep) and their members to @members (int). */
void cmx_unit_steps(const SimCrossMeshPlan *plan, const CmxUnit *u, int sender, GArray *steps,
                    GArray *members);
/* Resource ids a step occupies, appended to @out (uint32_t). */
void cmx_step_resources(const SimCrossMeshPlan *plan, const CmxStep *step, const int *members,
                        GArray *out);
/* Whether @resource is a NIC side (the resources the plan's order is kept on). */
gboolean cmx_resource_is_nic(const SimCrossMeshPlan *plan, uint32_t resource);
/* T of unit @u sent by @sender alone: its steps list-scheduled on their resources. */
double cmx_unit_seconds(const SimCrossMeshPlan *plan, const CmxUnit *u, int sender);

/* The load balancers: set every unit's choice and plan->order, plan->cost. */
void cmx_balance(SimCrossMeshPlan *plan);
/* Eq. 1 for @order and per-unit candidate @choice (scratch: 2 * nodes doubles). */
double cmx_schedule_cost(const SimCrossMeshPlan *plan, const uint32_t *order, const int *choice,
                         double *scratch);

#endif
