package io.dgen.examples;

import io.dgen.Call;
import io.dgen.DGen;
import io.dgen.DGenServer;
import io.dgen.From;
import io.dgen.InitResult;
import io.dgen.Result;
import io.dgen.ServerRef;
import io.dgen.StartOptions;
import io.dgen.Tenant;
import io.dgen.backend.Backend;
import io.dgen.backend.memory.MemoryBackend;
import java.util.ArrayList;
import java.util.List;

/**
 * A chat room whose state is a list of messages, each with a String {@code id}. The structured
 * state encoding stores such a list item by item, so editing or moving one message writes about
 * that message, not the whole room. On the memory backend the example prints the bytes each step
 * wrote.
 */
public final class ChatRoomExample {

  private ChatRoomExample() {}

  /** A chat room. */
  public static final class ChatRoom implements DGenServer<ChatRoom.Room, ChatRoom.Msg> {

    /** One message of the room; {@code id} makes the list storable item by item. */
    public record Message(String id, String author, String text) {}

    /** The room's state. */
    public record Room(String name, List<Message> messages) {}

    /** What the room understands: every request is a call. */
    public sealed interface Msg permits Change, Show {}

    /** A change of the room's messages, answered with the number of messages after it. */
    public sealed interface Change extends Msg, Call<Integer> permits Post, Edit, Move {}

    /** Appends messages. */
    public record Post(List<Message> messages) implements Change {}

    /** Replaces the text of message {@code id}. */
    public record Edit(String id, String text) implements Change {}

    /** Moves message {@code id} to position {@code index} (0 is the top). */
    public record Move(String id, int index) implements Change {}

    /** Answers the whole room. */
    public record Show() implements Msg, Call<Room> {}

    @Override
    public InitResult<Room> init(Object arg) {
      return InitResult.ok(new Room((String) arg, List.of()));
    }

    @Override
    public Result<Room> handleCall(Msg request, From from, Room room) {
      if (request instanceof Show show) {
        return Result.reply(show, room, room);
      }
      Change change = (Change) request;
      List<Message> messages = new ArrayList<>(room.messages());
      if (change instanceof Post post) {
        messages.addAll(post.messages());
      } else if (change instanceof Edit edit) {
        int i = indexOf(messages, edit.id());
        Message old = messages.get(i);
        messages.set(i, new Message(old.id(), old.author(), edit.text()));
      } else if (change instanceof Move move) {
        Message moved = messages.remove(indexOf(messages, move.id()));
        messages.add(move.index(), moved);
      }
      return Result.reply(change, messages.size(), new Room(room.name(), messages));
    }

    private static int indexOf(List<Message> messages, String id) {
      for (int i = 0; i < messages.size(); i++) {
        if (messages.get(i).id().equals(id)) {
          return i;
        }
      }
      throw new IllegalArgumentException("no message with id " + id);
    }
  }

  /**
   * Runs the example on the memory backend (it prints the backend it runs on), on FoundationDB when
   * a cluster file is given ({@code --cluster-file PATH} or {@code FDB_CLUSTER_FILE}), or on the
   * embedded RocksDB backend in {@code --data-dir DIR}. It resets its servers in tenant {@code
   * examples/chat}: on a cluster file or a data directory it runs only with {@code --yes}.
   *
   * @param args optional {@code --cluster-file PATH} or {@code --data-dir DIR}, with {@code --yes};
   *     or {@code --memory}
   */
  public static void main(String[] args) {
    try (Backend backend = Backends.openOverwriting(args, "examples/chat");
        DGen dgen = DGen.builder(backend).build()) {
      Tenant tenant = dgen.tenant("examples", "chat");
      ServerRef<ChatRoom.Msg> room =
          dgen.start(new ChatRoom(), "#release", StartOptions.builder(tenant).reset(true).build());
      Bytes bytes = new Bytes(backend);

      long posted =
          bytes.written(
              () ->
                  room.call(
                      new ChatRoom.Post(
                          List.of(
                              message("m1", "ada", "Release candidate 3 is tagged."),
                              message("m2", "linus", "Running the soak tests on it tonight."),
                              message("m3", "grace", "The docs still mention the old flag."),
                              message("m4", "ada", "Good catch, I will fix the docs."),
                              message("m5", "ken", "Benchmarks look the same as RC2."),
                              message("m6", "grace", "Ship it once the docs are fixed.")))));
      show(room, "posted 6 messages", posted);

      long edited =
          bytes.written(
              () -> room.call(new ChatRoom.Edit("m3", "The docs are fixed: the flag is gone.")));
      show(room, "edited m3", edited);

      long moved = bytes.written(() -> room.call(new ChatRoom.Move("m6", 0)));
      show(room, "moved m6 to the top", moved);

      if (backend instanceof MemoryBackend) {
        System.out.printf(
            "bytes written: posting all 6 = %d, editing one = %d, moving one = %d%n",
            posted, edited, moved);
      }
    }
  }

  private static ChatRoom.Message message(String id, String author, String text) {
    return new ChatRoom.Message(id, author, text);
  }

  private static void show(ServerRef<ChatRoom.Msg> ref, String step, long bytesWritten) {
    ChatRoom.Room room = ref.call(new ChatRoom.Show());
    System.out.println(
        step + (bytesWritten >= 0 ? " (" + bytesWritten + " bytes written)" : "") + ":");
    for (ChatRoom.Message m : room.messages()) {
      System.out.printf("  %s %-6s %s%n", m.id(), m.author(), m.text());
    }
  }

  /** Measures the bytes the memory backend writes; -1 on other backends. */
  private static final class Bytes {
    private final Backend backend;

    Bytes(Backend backend) {
      this.backend = backend;
    }

    long written(Runnable step) {
      if (!(backend instanceof MemoryBackend)) {
        step.run();
        return -1;
      }
      MemoryBackend memory = (MemoryBackend) backend;
      MemoryBackend.Counters before = memory.counters();
      step.run();
      return memory.counters().minus(before).bytesWritten();
    }
  }
}
