# Collectives: the reduction kernels are plain loops written for the
# vectorizer; -O2 alone (GCC's very-cheap cost model) leaves most scalar.
ifneq ($(DEBUG),1)
$(BUILD)/obj/src/coll/op.o: CFLAGS += -ftree-vectorize -fvect-cost-model=dynamic
endif
