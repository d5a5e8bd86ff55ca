/* m40-doctor's checks against fake machines: a fake NVML table and a fake
** CUDA layer replay missing libraries, no GPU, driver branches before and
** after R580, ECC errors, throttling, an M40 with its memory hidden by the
** BIOS, builds without code for the device, and library versions. CPU only. */
#include "check.h"
#include "bench/bench.h"
#include "doctor/doctor_internal.h"

#include <stdlib.h>
#include <stdint.h>
#include <string.h>

/* ---- the fake machine ------------------------------------------------------ */

typedef struct fake_gpu {
    const char *name;
    int cc_major, cc_minor, sm_count;
    double total_gib, free_gib;
    int ecc;
    unsigned long long ecc_uv, ecc_ua, ecc_cv;
    unsigned gen, gen_max, width, width_max;
    int pm;
    unsigned temp, power_w, limit_w, default_w, sm, sm_max, mem, mem_max;
    unsigned long long reasons;
} fake_gpu;

static struct {
    const char *driver;
    int ngpu;
    fake_gpu g[2];
    int cuda_driver, cuda_runtime, count_err, probe_err;
    int cublas_major;
    size_t cudnn; /* 0 = not found */
    m40__doc_func func;
} M;

#define GIB (1024.0 * 1024.0 * 1024.0)
static int idx(m40__nvml_dev d) { return (int)(uintptr_t)d - 1; }

static int f_count(unsigned *n) { *n = (unsigned)M.ngpu; return 0; }
static int f_by_index(unsigned i, m40__nvml_dev *d) {
    if ((int)i >= M.ngpu) return 2;
    *d = (m40__nvml_dev)(uintptr_t)(i + 1);
    return 0;
}
static int f_driver(char *b, unsigned n) { snprintf(b, n, "%s", M.driver); return 0; }
static int f_name(m40__nvml_dev d, char *b, unsigned n) { snprintf(b, n, "%s", M.g[idx(d)].name); return 0; }
static int f_uuid(m40__nvml_dev d, char *b, unsigned n) {
    unsigned char u[16] = {0};
    u[0] = (unsigned char)(0xA0 + idx(d));
    m40__uuid_str(u, b, n);
    return 0;
}
static int f_cc(m40__nvml_dev d, int *a, int *b) { *a = M.g[idx(d)].cc_major; *b = M.g[idx(d)].cc_minor; return 0; }
static int f_memory(m40__nvml_dev d, m40__nvml_memory *m) {
    m->total = (unsigned long long)(M.g[idx(d)].total_gib * GIB);
    m->free = (unsigned long long)(M.g[idx(d)].free_gib * GIB);
    m->used = m->total - m->free;
    return 0;
}
static int f_ecc_mode(m40__nvml_dev d, int *c, int *p) { *c = *p = M.g[idx(d)].ecc; return 0; }
static int f_ecc_err(m40__nvml_dev d, int type, int counter, unsigned long long *v) {
    const fake_gpu *g = &M.g[idx(d)];
    *v = type == M40__NVML_ECC_CORRECTED ? g->ecc_cv : counter == M40__NVML_ECC_VOLATILE ? g->ecc_uv : g->ecc_ua;
    return 0;
}
static int f_gen(m40__nvml_dev d, unsigned *v) { *v = M.g[idx(d)].gen; return 0; }
static int f_gen_max(m40__nvml_dev d, unsigned *v) { *v = M.g[idx(d)].gen_max; return 0; }
static int f_width(m40__nvml_dev d, unsigned *v) { *v = M.g[idx(d)].width; return 0; }
static int f_width_max(m40__nvml_dev d, unsigned *v) { *v = M.g[idx(d)].width_max; return 0; }
static int f_pm(m40__nvml_dev d, int *v) { *v = M.g[idx(d)].pm; return 0; }
static int f_temp(m40__nvml_dev d, int s, unsigned *v) { (void)s; *v = M.g[idx(d)].temp; return 0; }
static int f_power(m40__nvml_dev d, unsigned *v) { *v = M.g[idx(d)].power_w * 1000; return 0; }
static int f_limit(m40__nvml_dev d, unsigned *v) { *v = M.g[idx(d)].limit_w * 1000; return 0; }
static int f_pdef(m40__nvml_dev d, unsigned *v) { *v = M.g[idx(d)].default_w * 1000; return 0; }
static int f_clock(m40__nvml_dev d, int t, unsigned *v) {
    *v = t == M40__NVML_CLOCK_SM ? M.g[idx(d)].sm : M.g[idx(d)].mem;
    return 0;
}
static int f_clock_max(m40__nvml_dev d, int t, unsigned *v) {
    *v = t == M40__NVML_CLOCK_SM ? M.g[idx(d)].sm_max : M.g[idx(d)].mem_max;
    return 0;
}
static int f_throttle(m40__nvml_dev d, unsigned long long *v) { *v = M.g[idx(d)].reasons; return 0; }

static const m40__nvml fake_nvml = {
    .device_count = f_count, .device_by_index = f_by_index, .driver_version = f_driver,
    .name = f_name, .uuid = f_uuid, .cc = f_cc, .memory = f_memory, .ecc_mode = f_ecc_mode,
    .ecc_errors = f_ecc_err, .pcie_gen = f_gen, .pcie_gen_max = f_gen_max, .pcie_width = f_width,
    .pcie_width_max = f_width_max, .persistence = f_pm, .temperature = f_temp,
    .power_usage = f_power, .power_limit = f_limit, .power_default = f_pdef, .clock = f_clock,
    .clock_max = f_clock_max, .throttle = f_throttle};

static int c_versions(void *u, int *d, int *r) { (void)u; *d = M.cuda_driver; *r = M.cuda_runtime; return M.cuda_driver ? 0 : 35; }
static int c_count(void *u, int *n) { (void)u; *n = M.count_err ? 0 : M.ngpu; return M.count_err; }
static int c_props(void *u, int dev, m40__doc_cuda_dev *p) {
    (void)u;
    const fake_gpu *g = &M.g[dev];
    snprintf(p->name, sizeof p->name, "%s", g->name);
    p->cc_major = g->cc_major;
    p->cc_minor = g->cc_minor;
    p->sm_count = g->sm_count;
    p->total_bytes = (unsigned long long)(g->total_gib * GIB);
    p->free_bytes = (unsigned long long)(g->free_gib * GIB);
    memset(p->uuid, 0, 16);
    p->uuid[0] = (unsigned char)(0xA0 + dev);
    p->has_uuid = 1;
    return 0;
}
static int c_probe(void *u, int dev, int *b, int *p) {
    (void)u;
    *b = *p = 10 * M.g[dev].cc_major + M.g[dev].cc_minor;
    return M.probe_err;
}
static const char *c_errstr(void *u, int e) {
    (void)u;
    return e == 100 ? "no CUDA-capable device is detected" : e == 209 ? "no kernel image is available for execution on the device" : "some CUDA error";
}
static int c_cublas(void *u, int *a, int *b, int *c) { (void)u; *a = M.cublas_major; *b = 2; *c = 1; return 0; }
static int c_cudnn(void *u, size_t *v, char *w, size_t n) {
    (void)u;
    if (!M.cudnn) { snprintf(w, n, "none of libcudnn.so.9, libcudnn.so.8 could be loaded"); return 1; }
    *v = M.cudnn;
    snprintf(w, n, "libcudnn.so.9");
    return 0;
}
static int c_func(void *u, int dev, m40__doc_func *f) { (void)u, (void)dev; *f = M.func; return 0; }

static const fake_gpu healthy_m40 = {
    .name = "Tesla M40 24GB", .cc_major = 5, .cc_minor = 2, .sm_count = 24, .total_gib = 22.4,
    .free_gib = 22.2, .ecc = 1, .gen = 3, .gen_max = 3, .width = 16, .width_max = 16, .pm = 1,
    .temp = 41, .power_w = 60, .limit_w = 250, .default_w = 250, .sm = 1114, .sm_max = 1114,
    .mem = 3004, .mem_max = 3004, .reasons = M40__THR_GPU_IDLE};

/* A machine with one healthy M40 and a complete sm_52 stack. */
static void machine_m40(void) {
    memset(&M, 0, sizeof M);
    M.driver = "580.95.05";
    M.ngpu = 1;
    M.g[0] = healthy_m40;
    M.cuda_driver = 13000;
    M.cuda_runtime = 11080;
    M.cublas_major = 11;
    M.cudnn = 91002; /* 9.10.2 */
    M.func = (m40__doc_func){.kernel_ok = 1, .kernel_n = 1048579, .copy_gbs = 221.0, .copy_mib = 256,
                             .copy_ms = 2.4, .sgemm_ok = 1, .sgemm_max_rel = 2e-7, .sgemm_n = 2048,
                             .sgemm_gflops = 5600, .sgemm_ms = 3.07};
}

static m40__doc_sys sys_full(const char *build) {
    m40__doc_sys s = {.build_info = build, .nvml = &fake_nvml, .cuda_versions = c_versions,
                      .cuda_count = c_count, .cuda_props = c_props, .cuda_probe = c_probe,
                      .cuda_errstr = c_errstr, .cublas_version = c_cublas,
                      .cudnn_version = c_cudnn, .functional = c_func};
    return s;
}

static m40_doctor_report *run(const m40__doc_sys *s) {
    m40_doctor_options o;
    m40_doctor_options_init(&o);
    m40_doctor_report *r = NULL;
    CHECK_ST(m40__doctor_run_sys(s, &o, &r), M40_OK);
    return r;
}

static const m40_doctor_item *find(const m40_doctor_report *r, int gpu, const char *check) {
    for (int i = 0; i < m40_doctor_report_get_count(r); i++) {
        const m40_doctor_item *it = m40_doctor_report_get_item(r, i);
        if (it->gpu == gpu && strcmp(it->check, check) == 0) return it;
    }
    return NULL;
}

static void dump(const char *title, const m40_doctor_report *r) {
    printf("--- %s\n", title);
    for (int i = 0; i < m40_doctor_report_get_count(r); i++) {
        const m40_doctor_item *it = m40_doctor_report_get_item(r, i);
        printf("  %-4s %2d %-18s %s | %s%s%s\n", m40_doctor_level_str(it->level), it->gpu, it->check,
               it->value, it->reason, it->fix[0] ? " | fix: " : "", it->fix);
    }
}

/* item `check` exists with `level`, and its text contains `needle` (if any) */
#define EXPECT(r, gpu_, check_, level_, needle_)                                          \
    do {                                                                                  \
        const m40_doctor_item *it_ = find(r, gpu_, check_);                               \
        const char *nd_ = (needle_);                                                      \
        CHECK(it_ != NULL);                                                               \
        if (!it_) fprintf(stderr, "  no item %s (gpu %d)\n", check_, gpu_);               \
        if (it_) {                                                                        \
            CHECK(it_->level == (level_));                                                \
            if (it_->level != (level_))                                                   \
                fprintf(stderr, "  %s: got %s\n", check_, m40_doctor_level_str(it_->level)); \
            if (nd_) {                                                                    \
                char all_[1200];                                                          \
                snprintf(all_, sizeof all_, "%s %s %s", it_->value, it_->reason, it_->fix); \
                CHECK(strstr(all_, nd_) != NULL);                                         \
                if (!strstr(all_, nd_)) fprintf(stderr, "  %s lacks '%s': %s\n", check_, nd_, all_); \
            }                                                                             \
        }                                                                                 \
    } while (0)

#define B52 "cuda=11.8.89 archs=52 cublas=yes cudnn=no"

static void test_helpers(void) {
    CHECK(m40__doc_driver_major("580.159.04") == 580);
    CHECK(m40__doc_driver_major("470.256.02") == 470);
    CHECK(m40__doc_driver_major("") == -1);
    CHECK(m40__doc_driver_major(NULL) == -1);
    char w[320];
    CHECK(m40__doc_code_for("52", 5, 2, w, sizeof w) == M40__CODE_SASS);
    CHECK(m40__doc_code_for("50", 5, 2, w, sizeof w) == M40__CODE_SASS); /* same major, lower minor */
    CHECK(m40__doc_code_for("52", 9, 0, w, sizeof w) == M40__CODE_PTX);
    CHECK(strstr(w, "compute_52") != NULL);
    CHECK(m40__doc_code_for("52-real", 9, 0, w, sizeof w) == M40__CODE_NONE);
    CHECK(m40__doc_code_for("90", 5, 2, w, sizeof w) == M40__CODE_NONE);
    CHECK(strstr(w, "no kernel image") != NULL);
    CHECK(m40__doc_code_for("52-virtual", 5, 2, w, sizeof w) == M40__CODE_PTX);
    CHECK(m40__doc_code_for("52-real,90", 9, 0, w, sizeof w) == M40__CODE_SASS);
    CHECK(m40__doc_code_for("90a", 10, 0, w, sizeof w) == M40__CODE_NONE); /* arch-specific */
    CHECK(m40__doc_code_for("none", 5, 2, w, sizeof w) == M40__CODE_NONE);
    CHECK(m40__doc_archs_have_maxwell("52-real,90") == 1);
    CHECK(m40__doc_archs_have_maxwell("90") == 0);
    int a, b, c;
    m40__doc_cudnn_split(91000, &a, &b, &c);
    CHECK(a == 9 && b == 10 && c == 0);
    m40__doc_cudnn_split(91400, &a, &b, &c);
    CHECK(a == 9 && b == 14 && c == 0);
    m40__doc_cudnn_split(8902, &a, &b, &c);
    CHECK(a == 8 && b == 9 && c == 2);
    char names[128];
    CHECK(strcmp(m40__throttle_names(0, names, sizeof names), "none") == 0);
    m40__throttle_names(M40__THR_SW_POWER_CAP | M40__THR_HW_THERMAL, names, sizeof names);
    CHECK(strcmp(names, "sw_power_cap,hw_thermal") == 0);
}

static void test_no_driver_cpu_build(void) {
    m40__doc_sys s = {.build_info = "cuda=no",
                      .nvml_why = "libnvidia-ml.so.1 could not be loaded (libnvidia-ml.so.1: "
                                  "cannot open shared object file: No such file or directory)",
                      .cudnn_version = c_cudnn};
    memset(&M, 0, sizeof M);
    m40_doctor_report *r = run(&s);
    dump("no driver, CPU-only build", r);
    EXPECT(r, -1, "build", M40_DOCTOR_FAIL, "without CUDA");
    EXPECT(r, -1, "driver", M40_DOCTOR_FAIL, "libnvidia-ml.so.1");
    EXPECT(r, -1, "cuda", M40_DOCTOR_SKIP, NULL);
    EXPECT(r, -1, "cudnn", M40_DOCTOR_INFO, "9.10");
    CHECK(m40_doctor_report_get_worst(r) == M40_DOCTOR_FAIL);
    m40_doctor_report_destroy(r);
}

static void test_no_gpu(void) {
    machine_m40();
    M.ngpu = 0;
    M.count_err = 100; /* cudaErrorNoDevice */
    m40__doc_sys s = sys_full(B52);
    m40_doctor_report *r = run(&s);
    dump("driver loaded, no GPU", r);
    EXPECT(r, -1, "gpu.count", M40_DOCTOR_FAIL, "no CUDA-capable device");
    EXPECT(r, -1, "driver", M40_DOCTOR_OK, "R580"); /* R580 with no GPU: the driver is fine */
    CHECK(find(r, 0, "gpu") == NULL);
    m40_doctor_report_destroy(r);

    /* no CUDA driver at all (libcuda missing): cudaDriverGetVersion gives 0 */
    machine_m40();
    M.cuda_driver = 0;
    M.count_err = 35;
    M.ngpu = 0;
    s = sys_full(B52);
    r = run(&s);
    EXPECT(r, -1, "cuda", M40_DOCTOR_FAIL, "libcuda.so.1");
    EXPECT(r, -1, "gpu.count", M40_DOCTOR_FAIL, "missing or older");
    m40_doctor_report_destroy(r);
}

static void test_healthy_m40(void) {
    machine_m40();
    m40__doc_sys s = sys_full(B52);
    m40_doctor_report *r = run(&s);
    dump("healthy M40 24GB, sm_52 build", r);
    CHECK(m40_doctor_report_get_worst(r) == M40_DOCTOR_OK);
    EXPECT(r, -1, "driver", M40_DOCTOR_OK, "R580");
    EXPECT(r, -1, "build", M40_DOCTOR_OK, NULL);
    EXPECT(r, -1, "cuda", M40_DOCTOR_OK, NULL);
    EXPECT(r, -1, "cublas", M40_DOCTOR_OK, NULL);
    EXPECT(r, -1, "cudnn", M40_DOCTOR_OK, "9.10.2");
    EXPECT(r, 0, "gpu", M40_DOCTOR_INFO, "Tesla M40");
    EXPECT(r, 0, "gpu.code", M40_DOCTOR_OK, "sm_52");
    EXPECT(r, 0, "gpu.memory", M40_DOCTOR_OK, "24 GB");
    EXPECT(r, 0, "gpu.ecc", M40_DOCTOR_OK, NULL);
    EXPECT(r, 0, "gpu.pcie", M40_DOCTOR_OK, NULL);
    EXPECT(r, 0, "gpu.throttle", M40_DOCTOR_OK, "gpu_idle");
    EXPECT(r, 0, "func.kernel", M40_DOCTOR_OK, NULL);
    EXPECT(r, 0, "func.copy", M40_DOCTOR_OK, "% of 288 GB/s");
    EXPECT(r, 0, "func.sgemm", M40_DOCTOR_OK, "6840");
    EXPECT(r, 0, "func.sgemm.check", M40_DOCTOR_OK, NULL);

    /* JSON: complete; the buffer rule: min(size, cap) bytes, a NUL only when
    ** size < cap, the whole size in *len */
    size_t need = 0, len = 0;
    CHECK_ST(m40_doctor_report_json(r, NULL, 0, &need), M40_OK);
    CHECK(need > 100);
    char small[16];
    memset(small, 'x', sizeof small);
    CHECK_ST(m40_doctor_report_json(r, small, sizeof small, &len), M40_OK);
    CHECK(len == need && memcmp(small, "{\"tool\"", 7) == 0 && small[15] != 0);
    char *buf = malloc(need + 1);
    CHECK_ST(m40_doctor_report_json(r, buf, need + 1, &len), M40_OK);
    CHECK(len == need && buf[need] == 0);
    CHECK(strncmp(buf, "{\"tool\":\"m40-doctor\"", 20) == 0);
    CHECK(strstr(buf, "\"worst\":\"OK\"") != NULL);
    CHECK(strstr(buf, "\"check\":\"func.copy\"") != NULL);
    CHECK(strstr(buf, "\"fail\":0") != NULL);
    CHECK(buf[strlen(buf) - 1] == '}');
    int depth = 0, instr = 0, ok = 1;
    for (const char *c = buf; *c; c++) { /* balanced outside strings */
        if (instr) {
            if (*c == '\\') c++;
            else if (*c == '"') instr = 0;
        } else if (*c == '"') instr = 1;
        else if (*c == '{' || *c == '[') depth++;
        else if (*c == '}' || *c == ']') ok &= --depth >= 0;
    }
    CHECK(ok && depth == 0 && !instr);
    free(buf);
    CHECK_ST(m40_doctor_report_json(NULL, NULL, 0, &len), M40_ERR_INVALID_ARG);
    CHECK_ST(m40_doctor_report_json(r, NULL, 0, NULL), M40_ERR_INVALID_ARG);
    m40_doctor_report_destroy(r);
    m40_doctor_report_destroy(NULL);
}

static void test_driver_branches(void) {
    /* R590+: the M40 disappears from NVML and CUDA */
    machine_m40();
    M.driver = "590.44.01";
    M.ngpu = 0;
    M.count_err = 100;
    m40__doc_sys s = sys_full(B52);
    m40_doctor_report *r = run(&s);
    dump("R590 driver on an M40 machine", r);
    EXPECT(r, -1, "driver", M40_DOCTOR_FAIL, "R580");
    m40_doctor_report_destroy(r);

    /* R590 with a newer GPU: fine, with a note */
    machine_m40();
    M.driver = "590.44.01";
    M.g[0] = (fake_gpu){.name = "NVIDIA H200", .cc_major = 9, .cc_minor = 0, .sm_count = 132,
                        .total_gib = 139.8, .free_gib = 139.0, .pm = 1, .temp = 30,
                        .gen = 5, .gen_max = 5, .width = 16, .width_max = 16};
    s = sys_full("cuda=13.0.88 archs=90 cublas=yes cudnn=no");
    M.cublas_major = 13;
    M.cudnn = 91400;
    r = run(&s);
    dump("R590 with an H200, arch-90 build", r);
    EXPECT(r, -1, "driver", M40_DOCTOR_OK, "an M40 needs R580");
    EXPECT(r, -1, "build", M40_DOCTOR_WARN, "no sm_5x");
    EXPECT(r, -1, "cublas", M40_DOCTOR_INFO, NULL);
    EXPECT(r, -1, "cudnn", M40_DOCTOR_INFO, "no Maxwell");
    EXPECT(r, 0, "gpu.memory", M40_DOCTOR_INFO, NULL);
    EXPECT(r, 0, "func.copy", M40_DOCTOR_INFO, "no reference figure");
    EXPECT(r, 0, "func.sgemm", M40_DOCTOR_INFO, "no reference figure");
    m40_doctor_report_destroy(r);

    /* old driver: CUDA driver API older than the runtime */
    machine_m40();
    M.cuda_driver = 11040;
    M.cuda_runtime = 12080;
    s = sys_full(B52);
    r = run(&s);
    EXPECT(r, -1, "cuda", M40_DOCTOR_FAIL, "older than the CUDA runtime");
    m40_doctor_report_destroy(r);
    M.cuda_driver = 12020; /* same major: minor-version compatibility */
    r = run(&s);
    EXPECT(r, -1, "cuda", M40_DOCTOR_WARN, "minor-version");
    m40_doctor_report_destroy(r);
}

static void test_gpu_faults(void) {
    machine_m40();
    M.g[0].ecc_uv = 3;
    m40__doc_sys s = sys_full(B52);
    m40_doctor_report *r = run(&s);
    EXPECT(r, 0, "gpu.ecc", M40_DOCTOR_FAIL, "3 uncorrectable");
    m40_doctor_report_destroy(r);
    M.g[0].ecc_uv = 0;
    M.g[0].ecc_ua = 2;
    r = run(&s);
    EXPECT(r, 0, "gpu.ecc", M40_DOCTOR_WARN, "over the card's life");
    m40_doctor_report_destroy(r);

    machine_m40();
    M.g[0].reasons = M40__THR_SW_THERMAL | M40__THR_HW_THERMAL;
    M.g[0].temp = 92;
    r = run(&s);
    dump("hot, thermally throttled M40", r);
    EXPECT(r, 0, "gpu.throttle", M40_DOCTOR_FAIL, "hw_thermal");
    EXPECT(r, 0, "gpu.temperature", M40_DOCTOR_FAIL, "airflow");
    m40_doctor_report_destroy(r);
    M.g[0].reasons = M40__THR_SW_POWER_CAP;
    M.g[0].temp = 83;
    M.g[0].limit_w = 180;
    r = run(&s);
    EXPECT(r, 0, "gpu.throttle", M40_DOCTOR_WARN, "sw_power_cap");
    EXPECT(r, 0, "gpu.temperature", M40_DOCTOR_WARN, NULL);
    EXPECT(r, 0, "gpu.power", M40_DOCTOR_WARN, "lowered");
    m40_doctor_report_destroy(r);

    /* memory far below the board's: "Above 4G decoding" */
    machine_m40();
    M.g[0].name = "Tesla M40";
    M.g[0].total_gib = M.g[0].free_gib = 3.9;
    r = run(&s);
    dump("M40 with most of its memory hidden", r);
    EXPECT(r, 0, "gpu.memory", M40_DOCTOR_FAIL, "Above 4G decoding");
    m40_doctor_report_destroy(r);
    M.g[0].name = "Tesla M40 24GB";
    M.g[0].total_gib = M.g[0].free_gib = 11.2;
    r = run(&s);
    EXPECT(r, 0, "gpu.memory", M40_DOCTOR_FAIL, "24 GB board");
    m40_doctor_report_destroy(r);
    M.g[0].name = "Tesla M40"; /* a healthy 12 GB board */
    r = run(&s);
    EXPECT(r, 0, "gpu.memory", M40_DOCTOR_OK, "12 GB");
    m40_doctor_report_destroy(r);
    M.g[0].free_gib = 2.0;
    r = run(&s);
    EXPECT(r, 0, "gpu.memory.free", M40_DOCTOR_WARN, NULL);
    m40_doctor_report_destroy(r);

    /* PCIe link narrower than the card */
    machine_m40();
    M.g[0].width = 8;
    r = run(&s);
    EXPECT(r, 0, "gpu.pcie", M40_DOCTOR_WARN, "x8");
    m40_doctor_report_destroy(r);
    M.g[0].width = 16;
    M.g[0].gen = 1; /* idle link power saving: fine */
    r = run(&s);
    EXPECT(r, 0, "gpu.pcie", M40_DOCTOR_OK, "idle");
    m40_doctor_report_destroy(r);

    M.g[0].pm = 0;
    r = run(&s);
    EXPECT(r, 0, "gpu.persistence", M40_DOCTOR_WARN, "persistenced");
    m40_doctor_report_destroy(r);
}

static void test_code_and_libs(void) {
    /* an arch-90 build on an M40: no kernel image */
    machine_m40();
    M.probe_err = 209;
    m40__doc_sys s = sys_full("cuda=13.0.88 archs=90 cublas=yes cudnn=no");
    m40_doctor_report *r = run(&s);
    dump("arch-90 CUDA 13 build on an M40", r);
    EXPECT(r, 0, "gpu.code", M40_DOCTOR_FAIL, "ARCHITECTURES=52");
    EXPECT(r, -1, "build", M40_DOCTOR_WARN, NULL);
    m40_doctor_report_destroy(r);

    /* an sm_52 build on a cc 9.0 GPU: PTX JIT */
    machine_m40();
    M.g[0].name = "NVIDIA H200";
    M.g[0].cc_major = 9;
    M.g[0].cc_minor = 0;
    s = sys_full(B52);
    r = run(&s);
    EXPECT(r, 0, "gpu.code", M40_DOCTOR_WARN, "JIT");
    m40_doctor_report_destroy(r);

    /* cuDNN and cuBLAS without Maxwell code on an M40 */
    machine_m40();
    M.cudnn = 91400;
    M.cublas_major = 13;
    s = sys_full(B52);
    r = run(&s);
    EXPECT(r, -1, "cudnn", M40_DOCTOR_FAIL, "9.11+");
    EXPECT(r, -1, "cublas", M40_DOCTOR_FAIL, NULL);
    m40_doctor_report_destroy(r);
    M.cudnn = 0;
    M.cublas_major = 12;
    r = run(&s);
    EXPECT(r, -1, "cudnn", M40_DOCTOR_INFO, "not found");
    EXPECT(r, -1, "cublas", M40_DOCTOR_OK, NULL);
    m40_doctor_report_destroy(r);

    /* functional: a wrong kernel result and a slow card */
    machine_m40();
    M.func.kernel_ok = 0;
    M.func.kernel_max_diff = 0.5;
    M.func.copy_gbs = 120;
    M.func.sgemm_gflops = 2000;
    r = run(&s);
    EXPECT(r, 0, "func.kernel", M40_DOCTOR_FAIL, NULL);
    EXPECT(r, 0, "func.copy", M40_DOCTOR_WARN, "below 60%");
    EXPECT(r, 0, "func.sgemm", M40_DOCTOR_WARN, "below half");
    m40_doctor_report_destroy(r);
    machine_m40();
    M.func.kernel_ok = -1;
    snprintf(M.func.err, sizeof M.func.err, "m40_add: no kernel image");
    r = run(&s);
    EXPECT(r, 0, "func.kernel", M40_DOCTOR_FAIL, "no kernel image");
    m40_doctor_report_destroy(r);

    /* --quick: no functional items; --device limits to one GPU */
    machine_m40();
    M.ngpu = 2;
    M.g[1] = healthy_m40;
    m40_doctor_options o;
    m40_doctor_options_init(&o);
    o.functional = 0;
    o.device = 1;
    CHECK_ST(m40__doctor_run_sys(&s, &o, &r), M40_OK);
    CHECK(find(r, 1, "gpu") != NULL && find(r, 0, "gpu") == NULL);
    CHECK(find(r, 1, "func.kernel") == NULL);
    m40_doctor_report_destroy(r);
    /* -1 is every GPU; -5 is a bug, not "all"; 2 is past the 2 GPUs */
    o.device = -1;
    CHECK_ST(m40__doctor_run_sys(&s, &o, &r), M40_OK);
    CHECK(find(r, 0, "gpu") != NULL && find(r, 1, "gpu") != NULL);
    m40_doctor_report_destroy(r);
    o.device = -5;
    r = (m40_doctor_report *)&o; /* poisoned: must come back NULL */
    CHECK_ST(m40__doctor_run_sys(&s, &o, &r), M40_ERR_INVALID_ARG);
    CHECK(r == NULL);
    CHECK_ST(m40_doctor_run(&o, &r), M40_ERR_INVALID_ARG);
    CHECK(r == NULL);
    o.device = 2;
    CHECK_ST(m40__doctor_run_sys(&s, &o, &r), M40_ERR_INVALID_ARG);
    CHECK(r == NULL);
    o.device = 1;
    o.struct_size = 4;
    CHECK_ST(m40__doctor_run_sys(&s, &o, &r), M40_ERR_INVALID_ARG);
    CHECK_ST(m40__doctor_run_sys(&s, NULL, NULL), M40_ERR_INVALID_ARG);
}

static void test_nvml_only(void) {
    /* a CPU-only build on a machine with a driver: NVML facts still come */
    machine_m40();
    m40__doc_sys s = {.build_info = "cuda=no", .nvml = &fake_nvml, .cudnn_version = c_cudnn};
    m40_doctor_report *r = run(&s);
    dump("CPU-only build, driver and M40 present", r);
    EXPECT(r, -1, "gpu.count", M40_DOCTOR_INFO, "1 GPU");
    EXPECT(r, 0, "gpu", M40_DOCTOR_INFO, "NVML only");
    EXPECT(r, 0, "gpu.memory", M40_DOCTOR_OK, NULL);
    EXPECT(r, 0, "gpu.throttle", M40_DOCTOR_OK, NULL);
    m40_doctor_report_destroy(r);
}

int main(void) {
    test_helpers();
    test_no_driver_cpu_build();
    test_no_gpu();
    test_healthy_m40();
    test_driver_branches();
    test_gpu_faults();
    test_code_and_libs();
    test_nvml_only();
    /* the real machine: runs whatever is (not) installed, never fails to run */
    m40_doctor_options o;
    m40_doctor_options_init(&o);
    o.functional = 0;
    m40_doctor_report *r = NULL;
    CHECK_ST(m40_doctor_run(&o, &r), M40_OK);
    CHECK(r && m40_doctor_report_get_count(r) > 0);
    dump("this machine (--quick)", r);
    m40_doctor_report_destroy(r);
    return m40t_finish("test_doctor");
}
