package io.datcp.shuffle.mapside;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.LocalDirAllocator;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.api.AuxiliaryLocalPathHandler;

/**
 * Map outputs looked up in the NodeManager's local directories ({@code
 * yarn.nodemanager.local-dirs}), as the NodeManager's own path handler does, for when the
 * NodeManager gives the service none: Hadoop 3.5.0's isolated aux-service class loader
 * (AuxiliaryServiceWithCustomClassLoader) keeps the handler it is given and does not pass it
 * on, so a ShuffleHandler loaded that way cannot find any map output.
 */
final class NodeLocalDirs implements AuxiliaryLocalPathHandler {
  private final Configuration conf;
  private final LocalDirAllocator dirs = new LocalDirAllocator(YarnConfiguration.NM_LOCAL_DIRS);

  NodeLocalDirs(Configuration conf) {
    this.conf = conf;
  }

  @Override
  public Path getLocalPathForRead(String path) throws IOException {
    return dirs.getLocalPathToRead(path, conf);
  }

  @Override
  public Path getLocalPathForWrite(String path) throws IOException {
    return dirs.getLocalPathForWrite(path, conf);
  }

  @Override
  public Path getLocalPathForWrite(String path, long size) throws IOException {
    return dirs.getLocalPathForWrite(path, size, conf);
  }

  @Override
  public Iterable<Path> getAllLocalPathsForRead(String path) throws IOException {
    return dirs.getAllLocalPathsToRead(path, conf);
  }
}
