package io.datcp.shuffle.mapside;

import io.netty.channel.Channel;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.util.concurrent.GlobalEventExecutor;
import java.util.function.Consumer;

/**
 * The channel group handed to Hadoop's ShuffleChannelHandler. Its channelActive adds every
 * accepted connection to the group before the first read, which is where this hook installs the
 * flow tracker; the channel then goes into ShuffleHandler's own group, which closes it on stop.
 * (Relies on Hadoop details pinned by ShuffleHandlerPinTest.)
 */
final class AcceptHook extends DefaultChannelGroup {
  private final ChannelGroup handlerChannels;
  private final Consumer<Channel> onAccept;

  AcceptHook(ChannelGroup handlerChannels, Consumer<Channel> onAccept) {
    super("datcp-accept-hook", GlobalEventExecutor.INSTANCE);
    this.handlerChannels = handlerChannels;
    this.onAccept = onAccept;
  }

  @Override
  public boolean add(Channel channel) {
    onAccept.accept(channel);
    return handlerChannels.add(channel);
  }

  @Override
  public int size() {
    return handlerChannels.size();
  }
}
