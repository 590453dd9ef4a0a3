/* The loopback transport (a rank sending to itself). */
#ifndef KN_P2P_SELF_H
#define KN_P2P_SELF_H

#include "tl/tl.h"

knit_status_t kn_self_create(int rank, kn_tl_recv_cb_t cb, void *cb_arg, kn_tl_t **out);

#endif
