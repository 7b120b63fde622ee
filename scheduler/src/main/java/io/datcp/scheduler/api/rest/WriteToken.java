package io.datcp.scheduler.api.rest;

import com.linecorp.armeria.common.HttpResponse;
import com.linecorp.armeria.common.HttpStatus;
import com.linecorp.armeria.server.HttpService;
import com.linecorp.armeria.server.auth.AuthService;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

/**
 * The bearer token that policy writes need. When none is configured, one is generated on first
 * start into DATA_DIR/token, created with mode 0600 so only the scheduler's user can read it, and
 * reused on later starts.
 */
public final class WriteToken {
  public static final String FILE_NAME = "token";
  private static final int TOKEN_BYTES = 32;

  private final byte[] token;

  private WriteToken(String token) {
    this.token = token.getBytes(StandardCharsets.UTF_8);
  }

  /** The configured token, else the one in {@code dataDir}, else a new one written there. */
  public static WriteToken loadOrCreate(Path dataDir, String configured) throws IOException {
    if (!configured.isEmpty()) {
      return new WriteToken(configured);
    }
    Path file = dataDir.resolve(FILE_NAME);
    if (Files.exists(file)) {
      return new WriteToken(Files.readString(file, StandardCharsets.US_ASCII).trim());
    }
    byte[] random = new byte[TOKEN_BYTES];
    new SecureRandom().nextBytes(random);
    String fresh = HexFormat.of().formatHex(random);
    Path tmp = dataDir.resolve(FILE_NAME + ".tmp");
    Files.deleteIfExists(tmp);
    // Created 0600 from the start: there is no moment when others could read it.
    Files.createFile(tmp, PosixFilePermissions.asFileAttribute(
        PosixFilePermissions.fromString("rw-------")));
    Files.writeString(tmp, fresh + "\n", StandardCharsets.US_ASCII);
    try {
      Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    } catch (FileAlreadyExistsException e) {
      return new WriteToken(Files.readString(file, StandardCharsets.US_ASCII).trim());
    }
    return new WriteToken(fresh);
  }

  public String value() {
    return new String(token, StandardCharsets.UTF_8);
  }

  /** A decorator that lets a request through only with "Authorization: Bearer TOKEN". */
  public Function<? super HttpService, AuthService> decorator() {
    return AuthService.builder()
        .addOAuth2((ctx, bearer) -> CompletableFuture.completedFuture(MessageDigest.isEqual(
            token, bearer.accessToken().getBytes(StandardCharsets.UTF_8))))
        .onFailure((delegate, ctx, req, cause) -> HttpResponse.ofJson(HttpStatus.UNAUTHORIZED,
            new ApiError("writes need the header 'Authorization: Bearer <token>'"
                + " (the token is in DATA_DIR/token unless auth.token is configured)",
                "Authorization")))
        .newDecorator();
  }
}
