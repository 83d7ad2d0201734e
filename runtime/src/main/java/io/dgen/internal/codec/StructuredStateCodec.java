package io.dgen.internal.codec;

import com.apple.foundationdb.subspace.Subspace;
import com.apple.foundationdb.tuple.Tuple;
import io.dgen.StateTooLargeException;
import io.dgen.backend.KeyValue;
import io.dgen.backend.Transaction;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JavaType;
import tools.jackson.databind.JsonNode;

/**
 * The structured state encoding (DESIGN §5): the state is stored by shape, recursively, so that a
 * small change writes a small diff, and a write costs CPU in proportion to what changed.
 *
 * <h2>Key layout</h2>
 *
 * Every node of the state's tree owns the keys under its prefix {@code P}; the root's prefix is the
 * state subspace {@code (tuid.., "s", 0)}.
 *
 * <table>
 *   <caption>Keys of a node at prefix P</caption>
 *   <tr><th>shape</th><th>key</th><th>value</th></tr>
 *   <tr><td>assigns (an object)</td><td>{@code (P.., "m")}</td><td>empty: the marker</td></tr>
 *   <tr><td></td><td>{@code (P.., "m", field, ..)}</td><td>the field's node, prefix {@code (P..,
 *       "m", field)}</td></tr>
 *   <tr><td>components (a list of objects with unique string ids)</td><td>{@code (P.., "l")}</td>
 *       <td>empty: the marker</td></tr>
 *   <tr><td></td><td>{@code (P.., "l", index, id, ..)}</td><td>the item's node, prefix {@code
 *       (P.., "l", index, id)}; {@code index} is a {@link FractionalIndex} byte string</td></tr>
 *   <tr><td>term (anything else)</td><td>{@code (P.., "t", n)}</td><td>chunk {@code n} of the
 *       node's Smile bytes, at most 100,000 bytes each</td></tr>
 * </table>
 *
 * <pre>
 * (tuid.., "s", 0, "v")                         version key: the runtime's, never touched here
 * (tuid.., "s", 0, "m")                         the state is an object
 * (tuid.., "s", 0, "m", "name", "t", 0)         a scalar field
 * (tuid.., "s", 0, "m", "items", "l")           a field holding a list of objects with ids
 * (tuid.., "s", 0, "m", "items", "l", ix, id, "m", "qty", "t", 0)
 * </pre>
 *
 * Markers make empty objects and lists unambiguous. The order of a list lives only in its item
 * keys: no id-to-index map is stored. Object fields come back in key order (field names by code
 * point).
 *
 * <h2>Shapes</h2>
 *
 * An object is assigns and an array of objects whose {@code id}s are unique strings is components,
 * unless the schema of the state type forces a term there ({@link io.dgen.StoreAsTerm}), or a
 * child's key prefix would pass {@link KeyPath#STRUCTURE_KEY_LIMIT} bytes (a very long field name
 * or id, or very deep nesting), or a name is not valid UTF-16. Everything else is a term, as is
 * every scalar. Shapes are chosen from the new state alone, so a diff and a fresh write agree —
 * except for a state that every write rewrites, which a process stores whole, as one term, once its
 * diffs keep losing ({@link #writeWhole}).
 *
 * <h2>Writes</h2>
 *
 * A write walks the new state object along the stored nodes ({@link StateWriter}), reading it as
 * Jackson would write it ({@link Plans}); a state the walk cannot read faithfully is serialized to
 * a tree first. Unchanged parts write nothing; removed fields and items are cleared by range; a
 * node whose shape changed is cleared and written afresh; a changed term is rewritten. A part that
 * is the very deeply immutable instance the stored node was written from is skipped without being
 * looked at; everything else is compared with what is stored. A write computes every mutation,
 * checks them against the budget (at most {@link StateTooLargeException#DEFAULT_BUDGET}, less if
 * the transaction has less left) and the key limit, and only then applies them, so a refused write
 * leaves the transaction untouched.
 *
 * <h2>Reads</h2>
 *
 * {@link #state} decodes a deeply immutable state once and hands the same instance to every caller.
 * Any other state is handed to one caller only: the very object the state was written from, once
 * the runtime {@linkplain StoredState#lend lent} it (its callback, commit and actions are done with
 * it), to the first caller; a fresh decode to every other. So a callback changing its state in
 * place never changes another's, and a callback whose commit failed after it changed its state in
 * place never sees that change again (the object was taken; the retry decodes).
 */
public final class StructuredStateCodec implements StateCodec {

  private final Serde serde;
  private final boolean termOnly;
  private final long budget;
  private final Plans plans;
  private final JavaType treeType;
  private final Map<JavaType, TermSchema> schemas = new ConcurrentHashMap<>();
  // Root classes of states the walk could not read: they are serialized whole from then on.
  private final Set<Class<?>> unwalkable = ConcurrentHashMap.newKeySet();

  /**
   * Creates the structured codec.
   *
   * @param serde the mapper to encode terms with and to introspect state types
   */
  public StructuredStateCodec(Serde serde) {
    this(serde, false, StateTooLargeException.DEFAULT_BUDGET);
  }

  /**
   * Creates a codec.
   *
   * @param serde the mapper
   * @param termOnly store the whole state as one term (the term encoding)
   * @param budget the bytes a write may use
   */
  StructuredStateCodec(Serde serde, boolean termOnly, long budget) {
    this.serde = serde;
    this.termOnly = termOnly;
    this.budget = budget;
    this.plans = new Plans(serde);
    this.treeType = serde.type(JsonNode.class);
  }

  /**
   * How a server's state is written: as a diff ({@code whole == false}; {@code count} is the run of
   * diffs so far that rewrote most of the state) or whole, as one term ({@code count} is the writes
   * left before the next probe of whether a diff would win again).
   */
  private record Mode(boolean whole, int count) {
    static final Mode DIFF = new Mode(false, 0);
  }

  /** A stored state: its root node and, once known, a deeply immutable state that writes it. */
  private static final class Stored implements StoredState {
    final StoredNode root;
    final Mode mode;
    // NONE until known. Any deeply immutable state that writes root will do, so racing offers
    // are harmless.
    private volatile @Nullable Object frozen;
    // The decoded state is known not to be deeply immutable: no need to check again.
    private volatile boolean thawed;
    // The state object this was written from, if not deeply immutable, until it is lent.
    private volatile @Nullable Object writtenFrom;
    // The state object lent by the runtime, until one callback takes it (NONE: none to take).
    private final AtomicReference<@Nullable Object> lent = new AtomicReference<>(StateWriter.NONE);

    Stored(StoredNode root, Mode mode, @Nullable Object frozen, @Nullable Object writtenFrom) {
      this.root = root;
      this.mode = mode;
      this.frozen = frozen;
      this.writtenFrom = writtenFrom;
    }

    @Override
    public JsonNode tree() {
      return root.tree();
    }

    @Override
    public void lend(@Nullable Object state) {
      if (state != null && state == writtenFrom && frozen == StateWriter.NONE) {
        writtenFrom = StateWriter.NONE;
        lent.set(state);
      }
    }

    /** The lent state object, to the first caller only; else {@link StateWriter#NONE}. */
    @Nullable Object take() {
      return lent.get() == StateWriter.NONE ? StateWriter.NONE : lent.getAndSet(StateWriter.NONE);
    }

    void offer(@Nullable Object state) {
      if (frozen == StateWriter.NONE) {
        frozen = state;
      }
    }
  }

  @Override
  public @Nullable StoredState decode(Subspace space, List<KeyValue> rows) {
    StoredNode root = RowReader.read(space, rows, serde);
    if (root == null) {
      return null;
    }
    return new Stored(root, Mode.DIFF, StateWriter.NONE, StateWriter.NONE);
  }

  @Override
  public @Nullable Object state(StoredState stored, JavaType stateType) {
    Stored s = (Stored) stored;
    Object frozen = s.frozen;
    if (frozen != StateWriter.NONE) {
      return frozen;
    }
    Object lent = s.take();
    if (lent != StateWriter.NONE) {
      return lent;
    }
    Object state = serde.fromTree(s.tree(), stateType);
    if (!s.thawed) {
      boolean shareable;
      try {
        Plan plan = plans.root(stateType).plan(state);
        ValueTrees walk = new ValueTrees();
        // Shared only if it also writes what is stored (a constructor may normalize its input).
        shareable = walk.frozen(state, plan, 0) && walk.same(state, plan, s.tree(), 0);
      } catch (ValueTrees.Unwalkable e) {
        shareable = false;
      }
      if (shareable) {
        s.offer(state);
      } else {
        s.thawed = true;
      }
    }
    return state;
  }

  @Override
  public boolean isDeeplyImmutable(@Nullable Object value) {
    if (value == null) {
      return true;
    }
    try {
      return ValueTrees.isFrozen(value, plans.root(serde.type(value.getClass())).plan(value));
    } catch (RuntimeException e) {
      return false;
    }
  }

  @Override
  public StoredState write(
      Transaction tx, Subspace space, @Nullable StoredState old, JsonNode tree) {
    return write(tx, space, old, tree, treeType);
  }

  @Override
  public StoredState write(
      Transaction tx,
      Subspace space,
      @Nullable StoredState old,
      @Nullable Object state,
      JavaType stateType,
      LongSupplier left) {
    LongSupplier limit = () -> Math.min(budget, left.getAsLong());
    TermSchema schema =
        termOnly
            ? TermSchema.NONE
            : schemas.computeIfAbsent(stateType, t -> TermSchema.of(serde.mapper(), t));
    Stored previous = old instanceof Stored s ? s : null;
    boolean whole = termOnly || writeWhole(previous, state, stateType);
    KeyPath root = new KeyPath(space.getKey());
    byte[] versionKey = space.pack(Tuple.from(RowReader.VERSION));
    StateWriter w = new StateWriter(new Mutations(root, versionKey, limit), serde, whole);
    StoredNode written = null;
    if (state == null || !unwalkable.contains(state.getClass())) {
      try {
        written = write(w, root, previous, state, plans.root(stateType), schema);
      } catch (ValueTrees.Unwalkable e) {
        unwalkable.add(state == null ? Object.class : state.getClass());
      }
    }
    if (written == null) {
      w = new StateWriter(new Mutations(root, versionKey, limit), serde, whole);
      written = write(w, root, previous, plans.serialize(state), Slot.TREE, schema);
    }
    if (previous != null && written == previous.root) {
      if (w.frozen) {
        previous.offer(state);
      } else {
        previous.writtenFrom = state; // it writes what is stored: it may be lent
      }
      return previous;
    }
    w.mutations.check(space);
    w.mutations.apply(tx);
    Mode mode = termOnly ? Mode.DIFF : next(previous, whole, w.mutations.sets(), written);
    return w.frozen
        ? new Stored(written, mode, state, StateWriter.NONE)
        : new Stored(written, mode, StateWriter.NONE, state);
  }

  // ---------------------------------------------------------------- diff or whole

  /** Diffs that set fewer keys than this always count as paying, whatever the state's size. */
  static final int SMALL_DIFF = 32;

  /** A run of this many diffs each rewriting half the state's keys or more turns it whole. */
  static final int LOSING_DIFFS = 4;

  /** A state written whole is probed once in this many writes. */
  static final int PROBE_EVERY = 64;

  /** A probe returns the state to diffs when at most this share of its leaves changed. */
  static final double PROBE_SHARE = 0.25;

  /**
   * Whether this write stores the state whole, as one term, rather than as a diff: after a run of
   * {@link #LOSING_DIFFS} diffs that each rewrote half or more of the state's keys (a diff then
   * costs a key per field where one value would do), until a probe finds that at most {@link
   * #PROBE_SHARE} of the state's leaves changed in one write.
   */
  private boolean writeWhole(@Nullable Stored previous, @Nullable Object state, JavaType type) {
    if (previous == null) {
      return false;
    }
    Mode mode = previous.mode;
    if (!mode.whole) {
      return mode.count >= LOSING_DIFFS;
    }
    if (mode.count > 0 || (state != null && state == previous.frozen)) {
      return true;
    }
    // An unchanged state writes nothing either way: it stays whole until a write changes it.
    int[] changes = Trees.changes(previous.tree(), treeOf(state, type));
    return changes[0] == 0 || (changes[0] >= SMALL_DIFF && changes[0] > PROBE_SHARE * changes[1]);
  }

  /** The mode after a write that changed something. */
  private static Mode next(@Nullable Stored previous, boolean whole, int sets, StoredNode written) {
    if (previous == null) {
      return Mode.DIFF;
    }
    Mode mode = previous.mode;
    if (whole) {
      return new Mode(true, mode.whole && mode.count > 0 ? mode.count - 1 : PROBE_EVERY);
    }
    if (mode.whole || previous.root.shape != written.shape) {
      return Mode.DIFF; // the state was stored afresh, not diffed
    }
    boolean losing = sets >= SMALL_DIFF && 2L * sets >= written.keys();
    return losing ? new Mode(false, mode.count + 1) : Mode.DIFF;
  }

  private JsonNode treeOf(@Nullable Object state, JavaType type) {
    if (state == null || !unwalkable.contains(state.getClass())) {
      try {
        return new ValueTrees().build(state, plans.root(type).plan(state), 0);
      } catch (ValueTrees.Unwalkable e) {
        // serialized below
      }
    }
    return plans.serialize(state);
  }

  private static StoredNode write(
      StateWriter w,
      KeyPath root,
      @Nullable Stored previous,
      @Nullable Object state,
      Slot slot,
      TermSchema schema) {
    if (previous == null) {
      // Unknown or absent: whatever is stored (in any encoding) goes, except the version key.
      w.mutations.clearNode(root);
      return w.fresh(root, state, slot, schema, 0);
    }
    Object before = previous.frozen;
    return w.diff(root, previous.root, before, state, slot, schema, 0);
  }
}
