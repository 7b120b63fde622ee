package io.datcp.scheduler.dashboard;

import com.linecorp.armeria.server.ServerBuilder;
import com.linecorp.armeria.server.file.FileService;
import com.linecorp.armeria.server.file.HttpFile;

/**
 * The operator dashboard: static HTML, CSS and JavaScript from the class path that read the
 * REST views (/api/v1/jobs, /api/v1/dashboard/...) in the browser, and the uPlot charting
 * library from its WebJar in the same jar (no CDN: clusters are often offline). Pages: the
 * overview at /, a job at /dashboard/job.html?id=JOB, a reducer host's plan at
 * /dashboard/host.html?host=HOST. Read-only, so no token is needed.
 */
public final class Dashboard {
  private static final String ROOT = "dashboard";
  /** The uPlot WebJar's files; its version is the pom's uplot.version. */
  private static final String UPLOT = "META-INF/resources/webjars/uplot/1.6.30/dist";

  private Dashboard() {}

  public static void mount(ServerBuilder sb) {
    ClassLoader cl = Dashboard.class.getClassLoader();
    sb.service("/", HttpFile.of(cl, ROOT + "/index.html").asService());
    sb.serviceUnder("/dashboard/lib/uplot/", FileService.of(cl, UPLOT));
    sb.serviceUnder("/dashboard/", FileService.of(cl, ROOT));
    sb.service("/api/v1/openapi.json", HttpFile.of(cl, "openapi.json").asService());
  }
}
