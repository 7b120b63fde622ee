package io.datcp.scheduler.dashboard;

import com.linecorp.armeria.server.ServerBuilder;
import com.linecorp.armeria.server.file.FileService;
import com.linecorp.armeria.server.file.HttpFile;

/**
 * The operator dashboard: static HTML, CSS and JavaScript from the class path that read the
 * REST views (/api/v1/jobs, /api/v1/flows) in the browser. Read-only, so no token is needed.
 */
public final class Dashboard {
  private static final String ROOT = "dashboard";

  private Dashboard() {}

  public static void mount(ServerBuilder sb) {
    ClassLoader cl = Dashboard.class.getClassLoader();
    sb.service("/", HttpFile.of(cl, ROOT + "/index.html").asService());
    sb.serviceUnder("/dashboard/", FileService.of(cl, ROOT));
    sb.service("/api/v1/openapi.json", HttpFile.of(cl, "openapi.json").asService());
  }
}
