/* Prints, as JSON, what a C compiler makes of stoker/stoker_c.h: each
 * struct's size and each member's offset and size, and the named
 * constants. tests/python/test_abi_layout.py compares it with the ctypes
 * structures of python/stoker/_native.py. Compiled as C, so that the header
 * is checked as the C it claims to be. */
#include <stddef.h>
#include <stdio.h>

#include "stoker/stoker_c.h"

#define MEMBER(type, member, last)                                       \
  printf("    \"%s\": [%zu, %zu]%s\n", #member, offsetof(type, member),  \
         sizeof(((type*)0)->member), (last) ? "" : ",")
#define CONSTANT(name, last) printf("  \"%s\": %d%s\n", #name, (int)(name), \
                                    (last) ? "" : ",")

int main(void) {
  printf("{\n\"structs\": {\n");
  printf("  \"ConsumerOptions\": {\"size\": %zu, \"members\": {\n",
         sizeof(stoker_consumer_options));
  MEMBER(stoker_consumer_options, struct_size, 0);
  MEMBER(stoker_consumer_options, prefetch, 0);
  MEMBER(stoker_consumer_options, name, 0);
  MEMBER(stoker_consumer_options, reconnect_timeout_ms, 0);
  MEMBER(stoker_consumer_options, copy_on_write, 1);
  printf("  }},\n  \"InputStats\": {\"size\": %zu, \"members\": {\n",
         sizeof(stoker_input_stats));
  MEMBER(stoker_input_stats, struct_size, 0);
  MEMBER(stoker_input_stats, batches, 0);
  MEMBER(stoker_input_stats, wait_seconds, 0);
  MEMBER(stoker_input_stats, step_seconds, 0);
  MEMBER(stoker_input_stats, input_bound_percent, 0);
  MEMBER(stoker_input_stats, recent_input_bound_percent, 1);
  printf("  }},\n  \"BatchInfo\": {\"size\": %zu, \"members\": {\n",
         sizeof(stoker_batch_info));
  MEMBER(stoker_batch_info, struct_size, 0);
  MEMBER(stoker_batch_info, images, 0);
  MEMBER(stoker_batch_info, dtype, 0);
  MEMBER(stoker_batch_info, layout, 0);
  MEMBER(stoker_batch_info, shape, 0);
  MEMBER(stoker_batch_info, image_bytes, 0);
  MEMBER(stoker_batch_info, labels, 0);
  MEMBER(stoker_batch_info, indices, 0);
  MEMBER(stoker_batch_info, size, 0);
  MEMBER(stoker_batch_info, slot, 0);
  MEMBER(stoker_batch_info, epoch, 0);
  MEMBER(stoker_batch_info, index, 0);
  MEMBER(stoker_batch_info, field_count, 1);
  printf("  }},\n  \"FieldInfo\": {\"size\": %zu, \"members\": {\n",
         sizeof(stoker_field_info));
  MEMBER(stoker_field_info, struct_size, 0);
  MEMBER(stoker_field_info, name, 0);
  MEMBER(stoker_field_info, kind, 0);
  MEMBER(stoker_field_info, dtype, 0);
  MEMBER(stoker_field_info, layout, 0);
  MEMBER(stoker_field_info, rank, 0);
  MEMBER(stoker_field_info, shape, 0);
  MEMBER(stoker_field_info, data, 0);
  MEMBER(stoker_field_info, bytes, 0);
  MEMBER(stoker_field_info, lengths, 0);
  MEMBER(stoker_field_info, row_stride, 1);
  printf("  }}\n},\n\"constants\": {\n");
  CONSTANT(STOKER_C_ABI_VERSION, 0);
  CONSTANT(STOKER_STATUS_OK, 0);
  CONSTANT(STOKER_STATUS_CANCELLED, 0);
  CONSTANT(STOKER_STATUS_UNKNOWN, 0);
  CONSTANT(STOKER_STATUS_INVALID_ARGUMENT, 0);
  CONSTANT(STOKER_STATUS_DEADLINE_EXCEEDED, 0);
  CONSTANT(STOKER_STATUS_NOT_FOUND, 0);
  CONSTANT(STOKER_STATUS_ALREADY_EXISTS, 0);
  CONSTANT(STOKER_STATUS_PERMISSION_DENIED, 0);
  CONSTANT(STOKER_STATUS_RESOURCE_EXHAUSTED, 0);
  CONSTANT(STOKER_STATUS_FAILED_PRECONDITION, 0);
  CONSTANT(STOKER_STATUS_ABORTED, 0);
  CONSTANT(STOKER_STATUS_OUT_OF_RANGE, 0);
  CONSTANT(STOKER_STATUS_UNIMPLEMENTED, 0);
  CONSTANT(STOKER_STATUS_INTERNAL, 0);
  CONSTANT(STOKER_STATUS_UNAVAILABLE, 0);
  CONSTANT(STOKER_STATUS_DATA_LOSS, 0);
  CONSTANT(STOKER_STATUS_UNAUTHENTICATED, 0);
  CONSTANT(STOKER_STATUS_NEXT_TIMED_OUT, 0);
  CONSTANT(STOKER_DTYPE_UINT8, 0);
  CONSTANT(STOKER_DTYPE_FLOAT32, 0);
  CONSTANT(STOKER_DTYPE_FLOAT16, 0);
  CONSTANT(STOKER_DTYPE_INT64, 0);
  CONSTANT(STOKER_FIELD_IMAGE, 0);
  CONSTANT(STOKER_FIELD_INT64, 0);
  CONSTANT(STOKER_FIELD_BYTES, 0);
  CONSTANT(STOKER_LAYOUT_NHWC, 0);
  CONSTANT(STOKER_LAYOUT_NCHW, 1);
  printf("}\n}\n");
  return 0;
}
