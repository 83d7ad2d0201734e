package io.dgen.internal.hosting;

/** One bucket of one kind: the unit a placement lease covers. */
record KindBucket(String kind, int bucket) {}
