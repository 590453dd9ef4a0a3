/* CRC-32C (Castagnoli), as used by iSCSI, ext4 and SCTP. */
#ifndef KN_UTIL_CRC32C_H
#define KN_UTIL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue a CRC: start with crc = 0.  crc32c("123456789") = 0xe3069283. */
uint32_t kn_crc32c(uint32_t crc, const void *buf, size_t len);

#endif
