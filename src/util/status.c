/* knit_strerror: the one table of status names. */
#include "knit.h"

const char *knit_strerror(knit_status_t s)
{
    switch (s) {
    case KNIT_OK: return "success";
    case KNIT_INPROGRESS: return "operation in progress";
    case KNIT_ERR_INVAL: return "invalid argument";
    case KNIT_ERR_NOMEM: return "out of memory";
    case KNIT_ERR_IO: return "input/output error";
    case KNIT_ERR_TIMEOUT: return "timed out";
    case KNIT_ERR_TRUNCATE: return "message truncated";
    case KNIT_ERR_PEER: return "peer process failed";
    case KNIT_ERR_PROTO: return "protocol error (malformed data)";
    case KNIT_ERR_NOT_SUPPORTED: return "not supported yet";
    case KNIT_ERR_AUTH: return "authentication refused";
    case KNIT_ERR_NOT_FOUND: return "not found";
    case KNIT_ERR_MODULE_FAULT: return "offload module faulted";
    case KNIT_ERR_AGAIN: return "resource temporarily unavailable";
    case KNIT_ERR_CANCELED: return "operation canceled";
    case KNIT_ERR_EXISTS: return "already exists";
    case KNIT_ERR_RANGE: return "value out of range";
    case KNIT_ERR_STATE: return "invalid state for this call";
    case KNIT_ERR_FABRIC: return "network fabric error";
    case KNIT_ERR_FAULT: return "buffer not accessible";
    case KNIT_ERR_PEER_FAULT: return "the peer's buffer is not accessible";
    }
    return s > 0 ? "operation in progress" : "unknown error";
}
