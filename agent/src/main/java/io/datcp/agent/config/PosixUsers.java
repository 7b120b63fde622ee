package io.datcp.agent.config;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Structure;
import java.util.OptionalInt;

/** User names to uids through the C library's getpwnam(3), so NSS (LDAP, sssd) answers too. */
final class PosixUsers {
  private PosixUsers() {}

  /** The start of struct passwd (pwd.h): the fields before the uid, and the uid. */
  @Structure.FieldOrder({"name", "password", "uid"})
  public static final class Passwd extends Structure {
    public String name;
    public String password;
    public int uid;
  }

  private interface LibC extends Library {
    LibC INSTANCE = Native.load("c", LibC.class);

    Passwd getpwnam(String name);
  }

  /** Empty for a name the host does not know. */
  static synchronized OptionalInt uid(String name) {
    Passwd p = LibC.INSTANCE.getpwnam(name); // static result buffer: hence synchronized
    return p == null ? OptionalInt.empty() : OptionalInt.of(p.uid);
  }
}
