/* m40-bench's statistics, telemetry summary, JSON and CSV, on the CPU. */
#include "check.h"
#include "bench/bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int near(double a, double b) { return fabs(a - b) <= 1e-12 * (1 + fabs(b)); }

static void test_stats(void) {
    m40__stats s;
    double odd[5] = {5, 1, 3, 2, 4};
    CHECK_ST(m40__stats_compute(odd, 5, &s), M40_OK);
    CHECK(s.n == 5 && near(s.median, 3) && near(s.min, 1) && near(s.max, 5));
    CHECK(near(s.q1, 2) && near(s.q3, 4) && near(s.iqr, 2) && near(s.mean, 3));
    CHECK(odd[0] == 5); /* input untouched */
    /* even n: numpy.percentile's linear rule: [1,2,3,4] -> q1 1.75, median 2.5, q3 3.25 */
    double even[4] = {4, 3, 2, 1};
    CHECK_ST(m40__stats_compute(even, 4, &s), M40_OK);
    CHECK(near(s.median, 2.5) && near(s.q1, 1.75) && near(s.q3, 3.25) && near(s.iqr, 1.5));
    double one[1] = {7.5};
    CHECK_ST(m40__stats_compute(one, 1, &s), M40_OK);
    CHECK(near(s.median, 7.5) && near(s.iqr, 0) && near(s.min, 7.5));
    CHECK_ST(m40__stats_compute(NULL, 0, &s), M40_OK);
    CHECK(s.n == 0 && s.median == 0);
    CHECK_ST(m40__stats_compute(NULL, 3, &s), M40_ERR_INVALID_ARG);
    CHECK_ST(m40__stats_compute(one, -1, &s), M40_ERR_INVALID_ARG);
    double sorted[3] = {1, 2, 10};
    CHECK(near(m40__quantile_sorted(sorted, 3, 0.75), 6));
    CHECK(near(m40__quantile_sorted(sorted, 3, 0), 1) && near(m40__quantile_sorted(sorted, 3, 1), 10));
}

static void test_telemetry(void) {
    m40__tele_sample s[3] = {
        {.t = 0, .sm_mhz = 1114, .mem_mhz = 3004, .temp_c = 70, .power_w = 200, .reasons = M40__THR_GPU_IDLE},
        {.t = 1, .sm_mhz = 1000, .mem_mhz = 3004, .temp_c = 85, .power_w = 250, .reasons = M40__THR_SW_THERMAL},
        {.t = 2, .sm_mhz = 0, .mem_mhz = 0, .temp_c = 80, .power_w = -1, .reasons = 0}};
    m40__tele_summary t;
    m40__tele_summarize(s, 1, &t);
    CHECK(t.n == 1 && !t.throttled && !t.thermal && t.sm_min == 1114 && near(t.power_max, 200));
    m40__tele_summarize(s, 3, &t);
    CHECK(t.n == 3 && t.throttled && t.thermal && !t.power);
    CHECK(t.sm_min == 1000 && t.sm_max == 1114 && near(t.sm_mean, 1057));
    CHECK(t.temp_max == 85 && near(t.power_max, 250) && near(t.power_mean, 225));
    CHECK(t.mem_min == 3004 && t.mem_max == 3004);
    CHECK(t.reasons == (M40__THR_GPU_IDLE | M40__THR_SW_THERMAL));
    s[0].reasons = M40__THR_SW_POWER_CAP;
    m40__tele_summarize(s, 1, &t);
    CHECK(t.throttled && t.power && !t.thermal);
    m40__tele_summarize(NULL, 0, &t);
    CHECK(t.n == 0 && !t.throttled && t.power_max < 0);
}

static void test_json(void) {
    m40__jbuf j;
    m40__jb_init(&j);
    m40__jb_obj_begin(&j);
    m40__jb_kstr(&j, "s", "a\"b\\c\nd\x01");
    m40__jb_knum(&j, "x", 1.5);
    m40__jb_knum(&j, "nan", NAN);
    m40__jb_kint(&j, "i", -3);
    m40__jb_kbool(&j, "b", true);
    m40__jb_key(&j, "arr");
    m40__jb_arr_begin(&j);
    m40__jb_num(&j, 1);
    m40__jb_str(&j, NULL);
    m40__jb_obj_begin(&j);
    m40__jb_obj_end(&j);
    m40__jb_arr_end(&j);
    m40__jb_key(&j, "empty");
    m40__jb_arr_begin(&j);
    m40__jb_arr_end(&j);
    m40__jb_obj_end(&j);
    const char *want = "{\"s\":\"a\\\"b\\\\c\\nd\\u0001\",\"x\":1.5,\"nan\":null,\"i\":-3,\"b\":true,"
                       "\"arr\":[1,null,{}],\"empty\":[]}";
    CHECK(!j.oom && strcmp(j.p, want) == 0);
    if (strcmp(j.p, want) != 0) fprintf(stderr, "got  %s\nwant %s\n", j.p, want);
    m40__jb_free(&j);
}

static void test_result(void) {
    m40__bench_result r;
    memset(&r, 0, sizeof r);
    snprintf(r.workload, sizeof r.workload, "gemm");
    snprintf(r.impl, sizeof r.impl, "m40_matmul");
    snprintf(r.label, sizeof r.label, "4096x4096x4096");
    snprintf(r.unit, sizeof r.unit, "GFLOP/s");
    snprintf(r.baseline, sizeof r.baseline, "cublas");
    r.m = r.n = r.k = 4096;
    r.batch = 4096;
    r.work = 2.0 * 4096 * 4096 * 4096;
    double t[4] = {25.0, 20.0, 21.0, 30.0};
    CHECK_ST(m40__stats_compute(t, 4, &r.t_ms), M40_OK); /* median 23 ms */
    r.baseline_value = 5000;
    r.max_rel_err = 3e-7;
    m40__bench_finish(&r);
    CHECK(near(r.value, r.work / 0.023 / 1e9));
    char f[160];
    double floor_ms = m40__bench_m40_floor(&r, f, sizeof f);
    CHECK(fabs(floor_ms - 20.09) < 0.01); /* m40-facts: 4096^3 >= 20.1 ms at peak */
    CHECK(strstr(f, "2*M*N*K / 6840 GFLOP/s") != NULL);
    r.has_tele = true;
    m40__tele_sample s = {.sm_mhz = 900, .mem_mhz = 3004, .temp_c = 88, .power_w = 249,
                          .reasons = M40__THR_HW_THERMAL | M40__THR_SW_POWER_CAP};
    m40__tele_summarize(&s, 1, &r.tele);
    m40__jbuf j;
    m40__jb_init(&j);
    m40__bench_result_json(&j, &r);
    CHECK(!j.oom);
    printf("result json: %s\n", j.p);
    CHECK(strstr(j.p, "\"workload\":\"gemm\"") && strstr(j.p, "\"shape\":{\"M\":4096,\"N\":4096,\"K\":4096}"));
    CHECK(strstr(j.p, "\"median\":23,") != NULL);
    CHECK(strstr(j.p, "\"baseline\":{\"impl\":\"cublas\",\"value\":5000,\"ratio\":") != NULL);
    CHECK(strstr(j.p, "\"throttle_reasons\":[\"sw_power_cap\",\"hw_thermal\"]") != NULL);
    CHECK(strstr(j.p, "\"throttled\":true") && strstr(j.p, "\"measured_on_m40\":false"));
    m40__jb_free(&j);

    /* CSV: as many columns as the header */
    char line[1024];
    m40__bench_result_csv(&r, line, sizeof line);
    printf("csv: %s\n", line);
    int hc = 1, lc = 1;
    for (const char *c = m40__bench_csv_header(); *c; c++) hc += *c == ',';
    for (const char *c = line; *c; c++) lc += *c == ',';
    CHECK(hc == lc);
    CHECK(strstr(line, "sw_power_cap|hw_thermal,1") != NULL);

    /* a copy result: bytes, no shape, no baseline, no telemetry */
    memset(&r, 0, sizeof r);
    snprintf(r.workload, sizeof r.workload, "copy");
    snprintf(r.unit, sizeof r.unit, "GB/s");
    r.work = 2.0 * 256 * 1048576;
    r.max_rel_err = -1;
    floor_ms = m40__bench_m40_floor(&r, f, sizeof f);
    CHECK(fabs(floor_ms - 2.0 * 256 * 1048576 / 288.4e9 * 1e3) < 1e-9);
    m40__jb_init(&j);
    m40__bench_result_json(&j, &r);
    CHECK(strstr(j.p, "\"baseline\":null") && strstr(j.p, "\"telemetry\":null") &&
          strstr(j.p, "\"shape\":{}") && strstr(j.p, "\"max_rel_err\":null"));
    m40__jb_free(&j);
}

static void test_timer_cpu(void) {
    m40_ctx_desc d;
    m40_ctx_desc_init(&d);
    d.device = M40_DEVICE_CPU;
    m40_ctx *c = NULL;
    CHECK_ST(m40_ctx_create(&d, &c), M40_OK);
    m40__evtimer t;
    CHECK_ST(m40__evtimer_create(c, &t), M40_OK);
    CHECK_ST(m40__evtimer_start(&t), M40_OK);
    volatile double x = 0;
    for (int i = 0; i < 100000; i++) x += i;
    CHECK_ST(m40__evtimer_stop(&t), M40_OK);
    double ms = -1;
    CHECK_ST(m40__evtimer_ms(&t, &ms), M40_OK);
    CHECK(ms >= 0 && ms < 1000);
    m40__evtimer_destroy(&t);
    CHECK_ST(m40__evtimer_create(NULL, &t), M40_ERR_INVALID_ARG);
    m40_ctx_destroy(c);
}

int main(void) {
    test_stats();
    test_telemetry();
    test_json();
    test_result();
    test_timer_cpu();
    return m40t_finish("test_bench");
}
