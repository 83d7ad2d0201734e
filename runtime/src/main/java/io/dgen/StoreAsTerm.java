package io.dgen;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Keeps a part of a server's state in one piece: the annotated field, record component or type is
 * stored as a single term (one Smile document, chunked if large) instead of being split into
 * per-field and per-item keys.
 *
 * <p>By default the runtime stores objects field by field and lists of objects with an {@code id}
 * item by item, so that a small change writes a small diff (see {@link StateEncoding#STRUCTURED}).
 * That is the wrong trade for a part that always changes as a whole, or that is read far more often
 * than written and has many tiny fields: such a part costs fewer keys as one term. The annotation
 * is the escape hatch:
 *
 * <pre>{@code
 * record State(
 *     Map<String, Account> accounts,          // one key per account
 *     @StoreAsTerm Matrix weights) {}         // rewritten as one value whenever it changes
 *
 * @StoreAsTerm
 * record Matrix(double[][] cells) {}          // every field of this type is a term
 * }</pre>
 *
 * <p>The runtime finds the annotation by introspecting the server's declared state type with the
 * runtime's Jackson mapper, once per type: on properties (fields, getters, record components,
 * constructor parameters) under their JSON names, and on the classes reached through property
 * types, collection elements, map values and {@code Optional}. For a sealed type, the annotations
 * of every permitted subtype apply to the fields of that name. A subtype that is not declared
 * anywhere (the runtime class of a value whose declared type is a non-sealed interface or abstract
 * class) is not seen: annotate the property that holds it instead.
 *
 * <p>Changing the annotation later is safe: the next write stores the part in its new shape and
 * clears the old keys.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({
  ElementType.FIELD,
  ElementType.METHOD,
  ElementType.PARAMETER,
  ElementType.RECORD_COMPONENT,
  ElementType.TYPE
})
public @interface StoreAsTerm {}
