/* The doctor's checks: read facts through the system layer (doctor_internal.h)
** and turn each into an OK / WARN / FAIL line with the reason and the fix.
** Every threshold that decides a level is written next to its check. */
#include "doctor_internal.h"
#include "../measure/measure.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define M40__LAST_MAXWELL_DRIVER 580 /* R580 is the last branch with Maxwell */
#define M40__GIB (1024.0 * 1024.0 * 1024.0)

/* ---- pure helpers -------------------------------------------------------- */

int m40__doc_driver_major(const char *v) {
    if (!v || !isdigit((unsigned char)v[0])) return -1;
    return atoi(v);
}

/* Calls f(arch number, has_sass, has_ptx, specific, token, user) per entry. */
static void each_arch(const char *archs, void (*f)(int, int, int, int, const char *, void *),
                      void *user) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", archs ? archs : "");
    for (char *tok = strtok(buf, ",; "); tok; tok = strtok(NULL, ",; ")) {
        if (!isdigit((unsigned char)tok[0])) continue; /* "none", "native", "all" */
        char *end = NULL;
        long a = strtol(tok, &end, 10);
        int specific = end && (*end == 'a' || *end == 'f');
        int sass = 1, ptx = 1;
        if (strstr(tok, "-real")) ptx = 0;
        if (strstr(tok, "-virtual")) sass = 0;
        f((int)a, sass, ptx, specific, tok, user);
    }
}

struct code_acc {
    int dev, major, minor;
    int sass, ptx, ptx_arch, any, maxwell;
    char list[160];
};

static void code_one(int a, int sass, int ptx, int specific, const char *tok, void *u) {
    struct code_acc *c = u;
    size_t l = strlen(c->list);
    snprintf(c->list + l, sizeof c->list - l, "%s%s", l ? "," : "", tok);
    c->any = 1;
    if (a / 10 == 5) c->maxwell = 1;
    if (sass && a / 10 == c->major && (specific ? a % 10 == c->minor : a % 10 <= c->minor))
        c->sass = a;
    if (ptx && (specific ? a == c->dev : a <= c->dev) && a > c->ptx_arch) {
        c->ptx = 1;
        c->ptx_arch = a;
    }
}

int m40__doc_code_for(const char *archs, int major, int minor, char *w, size_t n) {
    struct code_acc c = {.dev = 10 * major + minor, .major = major, .minor = minor};
    each_arch(archs, code_one, &c);
    if (c.sass) {
        snprintf(w, n, "sm_%d machine code in the build runs on cc %d.%d as is", c.sass, major,
                 minor);
        return M40__CODE_SASS;
    }
    if (c.ptx) {
        snprintf(w, n,
                 "no machine code for cc %d.%d in the build (%s): the driver JIT-compiles "
                 "the compute_%d PTX at first use (slow once, then cached in ~/.nv/ComputeCache)",
                 major, minor, c.list, c.ptx_arch);
        return M40__CODE_PTX;
    }
    snprintf(w, n,
             "the build has code for %s only: a cc %d.%d device gets \"no kernel image is "
             "available for execution on the device\"",
             c.any ? c.list : "no known architecture", major, minor);
    return M40__CODE_NONE;
}

static void maxwell_one(int a, int sass, int ptx, int specific, const char *tok, void *u) {
    (void)sass, (void)ptx, (void)specific, (void)tok;
    if (a / 10 == 5) *(int *)u = 1;
}

int m40__doc_archs_have_maxwell(const char *archs) {
    int m = 0;
    each_arch(archs, maxwell_one, &m);
    return m;
}

void m40__doc_cudnn_split(size_t v, int *major, int *minor, int *patch) {
    if (v >= 90000) { /* 9.x: MAJOR*10000 + MINOR*100 + PATCH */
        *major = (int)(v / 10000);
        *minor = (int)(v % 10000 / 100);
        *patch = (int)(v % 100);
    } else { /* up to 8.x: MAJOR*1000 + MINOR*100 + PATCH */
        *major = (int)(v / 1000);
        *minor = (int)(v % 1000 / 100);
        *patch = (int)(v % 100);
    }
}

/* value of "key=" in a build-info string */
static void info_get(const char *info, const char *key, char *out, size_t n) {
    out[0] = 0;
    const char *p = info ? strstr(info, key) : NULL;
    if (!p) return;
    p += strlen(key);
    size_t i = 0;
    while (p[i] && p[i] != ' ' && i + 1 < n) {
        out[i] = p[i];
        i++;
    }
    out[i] = 0;
}

/* ---- the checks ----------------------------------------------------------- */

typedef struct doc_state {
    const m40__doc_sys *sys;
    m40_doctor_report *r;
    char archs[128], build_cuda[32];
    int cuda_ok;        /* the runtime can see at least one device */
    int maxwell_seen;   /* a cc 5.x GPU was found (CUDA or NVML) */
} doc_state;

static const char *cerr(const doc_state *s, int e) {
    const char *t = s->sys->cuda_errstr ? s->sys->cuda_errstr(s->sys->user, e) : NULL;
    return t ? t : "CUDA error";
}

static int is_m40(const char *name, int major, int minor) {
    return name && strstr(name, "M40") && major == 5 && minor == 2;
}

static void check_build(doc_state *s) {
    m40_doctor_report *r = s->r;
    const char *info = s->sys->build_info ? s->sys->build_info : "cuda=no";
    snprintf(r->build, sizeof r->build, "%s", info);
    info_get(info, "cuda=", s->build_cuda, sizeof s->build_cuda);
    info_get(info, "archs=", s->archs, sizeof s->archs);
    if (!s->build_cuda[0] || strcmp(s->build_cuda, "no") == 0) {
        m40_doctor_item *it =
            m40__doc_add(r, M40_DOCTOR_FAIL, -1, "build", "libm40 %s: %s", m40_version(), info);
        m40__doc_why(it, "this libm40 was built without CUDA (M40_CUDA=OFF or no CUDA compiler "
                         "found): it runs the CPU reference only and cannot use any GPU");
        m40__doc_fix(it, "rebuild with CUDA 11.8-12.9 (CUDA 13 has no sm_52): cmake -DM40_CUDA=ON "
                         "-DCMAKE_CUDA_COMPILER=/path/to/nvcc (README.md, \"Building for an M40 by hand\")");
        return;
    }
    if (m40__doc_archs_have_maxwell(s->archs)) {
        m40_doctor_item *it =
            m40__doc_add(r, M40_DOCTOR_OK, -1, "build", "libm40 %s, CUDA %s, archs %s",
                         m40_version(), s->build_cuda, s->archs);
        m40__doc_why(it, "the build carries Maxwell (sm_5x) code");
    } else {
        m40_doctor_item *it =
            m40__doc_add(r, M40_DOCTOR_WARN, -1, "build", "libm40 %s, CUDA %s, archs %s",
                         m40_version(), s->build_cuda, s->archs);
        m40__doc_why(it,
                     "no sm_5x code in this build: a Tesla M40 cannot run it (fine for the GPU it "
                     "was built for, if that is what you test on)");
        m40__doc_fix(it, "for an M40 build with CUDA 11.8-12.9 and -DCMAKE_CUDA_ARCHITECTURES=52");
    }
}

/* NVML's driver line; called after the GPUs are known (R590+ hides Maxwell). */
static void check_driver(doc_state *s, int nvml_gpus) {
    const m40__doc_sys *sys = s->sys;
    m40_doctor_report *r = s->r;
    if (!sys->nvml) {
        m40_doctor_item *it = m40__doc_add(r, M40_DOCTOR_FAIL, -1, "driver", "not found");
        m40__doc_why(it, "no NVIDIA driver: %s",
                     sys->nvml_why ? sys->nvml_why : "NVML unavailable");
        m40__doc_fix(it,
                     "install the NVIDIA driver, branch R580 (the last with Maxwell), e.g. Debian/"
                     "Ubuntu nvidia-driver-580 or the .run file from nvidia.com; then reboot");
        return;
    }
    char ver[96] = "";
    int rc = sys->nvml->driver_version ? sys->nvml->driver_version(ver, sizeof ver)
                                       : M40__NVML_ERROR_NOT_SUPPORTED;
    if (rc != M40__NVML_SUCCESS) {
        m40_doctor_item *it = m40__doc_add(r, M40_DOCTOR_WARN, -1, "driver", "version unknown");
        m40__doc_why(it, "nvmlSystemGetDriverVersion: %s", m40__nvml_errstr(sys->nvml, rc));
        return;
    }
    int major = m40__doc_driver_major(ver);
    if (major < 0) {
        m40_doctor_item *it = m40__doc_add(r, M40_DOCTOR_WARN, -1, "driver", "%s", ver);
        m40__doc_why(it, "cannot read the branch from the version string");
        return;
    }
    if (major <= M40__LAST_MAXWELL_DRIVER) {
        m40_doctor_item *it =
            m40__doc_add(r, M40_DOCTOR_OK, -1, "driver", "%s (R%d branch)", ver, major);
        m40__doc_why(it, "Maxwell is supported up to the R%d branch", M40__LAST_MAXWELL_DRIVER);
        return;
    }
    if (s->maxwell_seen || nvml_gpus == 0) {
        m40_doctor_item *it =
            m40__doc_add(r, M40_DOCTOR_FAIL, -1, "driver", "%s (R%d branch)", ver, major);
        m40__doc_why(it,
                     "drivers after R%d have no Maxwell support: an M40 is not driven (NVML and "
                     "CUDA do not list it)%s",
                     M40__LAST_MAXWELL_DRIVER,
                     nvml_gpus == 0 ? "; no GPU is visible to this driver" : "");
        m40__doc_fix(it,
                     "install an R%d driver (e.g. nvidia-driver-580) and pin it so updates do not "
                     "replace it (apt-mark hold)",
                     M40__LAST_MAXWELL_DRIVER);
        return;
    }
    m40_doctor_item *it =
        m40__doc_add(r, M40_DOCTOR_OK, -1, "driver", "%s (R%d branch)", ver, major);
    m40__doc_why(it, "fine for the GPUs found here; note that an M40 needs R%d or older",
                 M40__LAST_MAXWELL_DRIVER);
}

static void check_cuda_versions(doc_state *s) {
    const m40__doc_sys *sys = s->sys;
    if (!sys->cuda_versions) {
        m40_doctor_item *it =
            m40__doc_add(s->r, M40_DOCTOR_SKIP, -1, "cuda", "no CUDA runtime in libm40");
        m40__doc_why(
            it, "built without CUDA: driver/runtime versions, devices and the functional check "
                "are not checked");
        return;
    }
    int drv = 0, rt = 0;
    int e = sys->cuda_versions(sys->user, &drv, &rt);
    if (e != M40__CUDA_SUCCESS || drv == 0) {
        m40_doctor_item *it =
            m40__doc_add(s->r, M40_DOCTOR_FAIL, -1, "cuda", "driver API none, runtime %d.%d",
                         rt / 1000, rt % 1000 / 10);
        m40__doc_why(it, "no CUDA driver (libcuda.so.1) could be used%s%s", e ? ": " : "",
                     e ? cerr(s, e) : "");
        m40__doc_fix(
            it, "install the NVIDIA driver (R580 for Maxwell); in a container, run it with the "
                "NVIDIA container toolkit (--gpus all)");
        return;
    }
    int dM = drv / 1000, dm = drv % 1000 / 10, rM = rt / 1000, rm = rt % 1000 / 10;
    if (drv >= rt) {
        m40_doctor_item *it = m40__doc_add(s->r, M40_DOCTOR_OK, -1, "cuda",
                                           "driver API %d.%d, runtime %d.%d", dM, dm, rM, rm);
        m40__doc_why(it, "the driver supports the runtime libm40 was built with");
    } else if (dM == rM) {
        m40_doctor_item *it = m40__doc_add(s->r, M40_DOCTOR_WARN, -1, "cuda",
                                           "driver API %d.%d, runtime %d.%d", dM, dm, rM, rm);
        m40__doc_why(it,
                     "older driver, same major: runs under minor-version compatibility, but PTX "
                     "made by the newer toolkit cannot be JIT-compiled by this driver");
        m40__doc_fix(it,
                     "update the driver to one that supports CUDA %d.%d (on Maxwell: stay on R580)",
                     rM, rm);
    } else {
        m40_doctor_item *it = m40__doc_add(s->r, M40_DOCTOR_FAIL, -1, "cuda",
                                           "driver API %d.%d, runtime %d.%d", dM, dm, rM, rm);
        m40__doc_why(it, "the driver is older than the CUDA runtime libm40 was built with "
                         "(cudaErrorInsufficientDriver)");
        m40__doc_fix(it,
                     "update the driver (R580 supports up to CUDA 13.0), or rebuild libm40 with a "
                     "CUDA %d.x toolkit",
                     dM);
    }
}

/* Per-GPU facts from NVML; d may be NULL (no NVML, or no match). */
static void check_nvml_gpu(doc_state *s, int g, m40__nvml_dev d, const char *name, int major,
                           int minor, unsigned long long cuda_total) {
    const m40__nvml *t = s->sys->nvml;
    m40_doctor_report *r = s->r;
    if (!t || !d) {
        m40_doctor_item *it = m40__doc_add(r, M40_DOCTOR_SKIP, g, "gpu.nvml", "no NVML data");
        m40__doc_why(it, "%s",
                     !t ? "NVML is not available: memory/ECC/PCIe/power/clock/throttle checks "
                          "need libnvidia-ml.so.1 from the driver"
                        : "no NVML device matches this CUDA device's UUID");
    }
    /* memory: what the board should have */
    m40__nvml_memory mem = {0, 0, 0};
    int have_mem = t && d && t->memory && t->memory(d, &mem) == M40__NVML_SUCCESS;
    unsigned long long total = have_mem ? mem.total : cuda_total;
    if (total) {
        double gib = total / M40__GIB, free_gib = have_mem ? mem.free / M40__GIB : -1;
        if (is_m40(name, major, minor)) {
            /* usable memory: ~11.2 GiB on the 12 GB board, ~22.4 GiB on the 24 GB one */
            int board = (name && strstr(name, "24")) || gib > 16.0 ? 24 : 12;
            double expect = board == 24 ? 22.4 : 11.2;
            m40_doctor_item *it;
            if (gib < 0.9 * expect) {
                it = m40__doc_add(r, M40_DOCTOR_FAIL, g, "gpu.memory",
                                  "%.1f GiB total (a %d GB board "
                                  "shows ~%.1f GiB)",
                                  gib, board, expect);
                m40__doc_why(it,
                             "far less memory than the board has: typically the BIOS maps the card "
                             "without \"Above 4G decoding\"");
                m40__doc_fix(
                    it, "enable \"Above 4G decoding\" (and disable CSM / enable UEFI boot) in the "
                        "BIOS; check dmesg for NVRM BAR errors");
            } else {
                it = m40__doc_add(r, M40_DOCTOR_OK, g, "gpu.memory",
                                  "%.1f GiB total, %.1f GiB free", gib, free_gib);
                m40__doc_why(it, "matches a %d GB M40", board);
            }
        } else {
            m40_doctor_item *it = m40__doc_add(r, M40_DOCTOR_INFO, g, "gpu.memory",
                                               "%.1f GiB total, %.1f GiB free", gib, free_gib);
            m40__doc_why(it,
                         "no expected size for this GPU (the 12/24 GB check applies to an M40)");
        }
        if (have_mem && mem.free < mem.total / 2) {
            m40_doctor_item *it = m40__doc_add(r, M40_DOCTOR_WARN, g, "gpu.memory.free",
                                               "%.1f of %.1f GiB free", free_gib, gib);
            m40__doc_why(it, "other processes hold over half of the memory");
            m40__doc_fix(it, "see them with nvidia-smi; large models need the whole card");
        }
    }
    if (!t || !d) return;

    /* ECC */
    int cur = 0, pend = 0;
    if (t->ecc_mode && t->ecc_mode(d, &cur, &pend) == M40__NVML_SUCCESS) {
        unsigned long long uv = 0, ua = 0, cv = 0;
        int have_uv = t->ecc_errors && t->ecc_errors(d, M40__NVML_ECC_UNCORRECTED,
                                                     M40__NVML_ECC_VOLATILE, &uv) == 0;
        int have_ua = t->ecc_errors && t->ecc_errors(d, M40__NVML_ECC_UNCORRECTED,
                                                     M40__NVML_ECC_AGGREGATE, &ua) == 0;
        if (t->ecc_errors) t->ecc_errors(d, M40__NVML_ECC_CORRECTED, M40__NVML_ECC_VOLATILE, &cv);
        m40_doctor_item *it;
        if (cur && have_uv && uv > 0) {
            it = m40__doc_add(r, M40_DOCTOR_FAIL, g, "gpu.ecc",
                              "on; %llu uncorrectable errors since boot", uv);
            m40__doc_why(it, "uncorrectable memory errors: results on this card cannot be trusted");
            m40__doc_fix(it, "reboot (retired pages take effect), then watch nvidia-smi -q -d "
                             "ECC,PAGE_RETIREMENT; a card that keeps failing needs replacing");
        } else if (cur && have_ua && ua > 0) {
            it = m40__doc_add(r, M40_DOCTOR_WARN, g, "gpu.ecc",
                              "on; %llu uncorrectable errors over the card's life, none since boot",
                              ua);
            m40__doc_why(it, "the card has had uncorrectable memory errors before");
            m40__doc_fix(it, "check nvidia-smi -q -d PAGE_RETIREMENT; watch for new ones");
        } else if (cur) {
            it = m40__doc_add(r, M40_DOCTOR_OK, g, "gpu.ecc", "on%s%s",
                              pend != cur ? " (off pending "
                                            "reboot)"
                                          : "",
                              cv ? "; corrected errors since boot" : "");
            m40__doc_why(it, "ECC on, no uncorrectable errors (%llu corrected since boot)", cv);
        } else {
            it = m40__doc_add(r, M40_DOCTOR_INFO, g, "gpu.ecc", "off%s",
                              pend ? " (on pending reboot)" : "");
            m40__doc_why(it, "ECC off: ~6%% more usable memory and bandwidth, no error detection");
        }
    }

    /* PCIe link: current vs max; the generation drops at idle to save power */
    unsigned gc = 0, gm = 0, wc = 0, wm = 0;
    if (t->pcie_gen && t->pcie_gen_max && t->pcie_width && t->pcie_width_max &&
        t->pcie_gen(d, &gc) == 0 && t->pcie_gen_max(d, &gm) == 0 && t->pcie_width(d, &wc) == 0 &&
        t->pcie_width_max(d, &wm) == 0) {
        m40_doctor_item *it;
        if (wc < wm) {
            it = m40__doc_add(r, M40_DOCTOR_WARN, g, "gpu.pcie", "gen %u x%u (max gen %u x%u)", gc,
                              wc, gm, wm);
            m40__doc_why(it,
                         "the link runs narrower than the card supports: host<->device copies are "
                         "%u times slower",
                         wm / (wc ? wc : 1));
            m40__doc_fix(it, "move the card to a x16 slot wired for x16; reseat it; check risers");
        } else if (gc < gm) {
            it = m40__doc_add(r, M40_DOCTOR_OK, g, "gpu.pcie", "gen %u x%u (max gen %u x%u)", gc,
                              wc, gm, wm);
            m40__doc_why(it,
                         "lower generation now is normal at idle (the link trains up under load); "
                         "if it stays low under load, check the slot and BIOS PCIe settings");
        } else {
            it = m40__doc_add(r, M40_DOCTOR_OK, g, "gpu.pcie", "gen %u x%u", gc, wc);
            m40__doc_why(it, "the link runs at its maximum");
        }
    }

    int pm = 0;
    if (t->persistence && t->persistence(d, &pm) == M40__NVML_SUCCESS) {
        m40_doctor_item *it = m40__doc_add(r, pm ? M40_DOCTOR_OK : M40_DOCTOR_WARN, g,
                                           "gpu.persistence", "%s", pm ? "on" : "off");
        if (pm) {
            m40__doc_why(it, "the driver stays loaded between processes");
        } else {
            m40__doc_why(it,
                         "each process pays the driver's start-up (seconds) and the card may drop "
                         "its clock settings in between");
            m40__doc_fix(
                it, "enable nvidia-persistenced (systemctl enable --now nvidia-persistenced) or "
                    "nvidia-smi -pm 1");
        }
    }

    unsigned temp = 0;
    if (t->temperature && t->temperature(d, 0, &temp) == M40__NVML_SUCCESS) {
        /* M40 slows down near 90 C; passively cooled, it needs a server's airflow */
        m40_doctor_level l = temp >= 90 ? M40_DOCTOR_FAIL : temp >= 80 ? M40_DOCTOR_WARN
                                                                        : M40_DOCTOR_OK;
        m40_doctor_item *it = m40__doc_add(r, l, g, "gpu.temperature", "%u C", temp);
        if (l == M40_DOCTOR_OK) {
            m40__doc_why(it, "below 80 C");
        } else {
            m40__doc_why(it, "%s; a passively cooled card in a desktop case throttles under load",
                         l == M40_DOCTOR_FAIL ? "at the slowdown threshold"
                                              : "hot before any load");
            m40__doc_fix(it,
                         "add airflow through the heatsink (a blower or fan shroud on the M40's "
                         "intake); watch nvidia-smi dmon -s pc under load");
        }
    }

    unsigned pw = 0, pl = 0, pdef = 0;
    int have_pw = t->power_usage && t->power_usage(d, &pw) == 0;
    int have_pl = t->power_limit && t->power_limit(d, &pl) == 0;
    int have_pdef = t->power_default && t->power_default(d, &pdef) == 0;
    if (have_pw || have_pl) {
        m40_doctor_item *it;
        if (have_pl && have_pdef && pl < pdef * 9 / 10) {
            it = m40__doc_add(r, M40_DOCTOR_WARN, g, "gpu.power",
                              "%.0f W of %.0f W limit (default %.0f W)", pw / 1000.0, pl / 1000.0,
                              pdef / 1000.0);
            m40__doc_why(it,
                         "the power limit was lowered below the default: the card will clock down "
                         "under load");
            m40__doc_fix(
                it, "restore it with nvidia-smi -pl %.0f (as root), if the PSU and cooling allow",
                pdef / 1000.0);
        } else {
            it = m40__doc_add(r, M40_DOCTOR_INFO, g, "gpu.power", "%.0f W of %.0f W limit",
                              pw / 1000.0, pl / 1000.0);
            if (is_m40(name, major, minor))
                m40__doc_why(
                    it, "the M40's board limit is 250 W, fed by an 8-pin CPU/EPS-12V plug (not "
                        "a PCIe 8-pin: use the proper adapter)");
        }
    }

    unsigned sm = 0, smx = 0, mc = 0, mcx = 0;
    if (t->clock && t->clock_max && t->clock(d, M40__NVML_CLOCK_SM, &sm) == 0 &&
        t->clock_max(d, M40__NVML_CLOCK_SM, &smx) == 0) {
        if (t->clock(d, M40__NVML_CLOCK_MEM, &mc) != 0) mc = 0;
        if (t->clock_max(d, M40__NVML_CLOCK_MEM, &mcx) != 0) mcx = 0;
        m40_doctor_item *it =
            m40__doc_add(r, M40_DOCTOR_INFO, g, "gpu.clocks",
                         "SM %u of %u MHz, memory %u of %u MHz", sm, smx, mc, mcx);
        m40__doc_why(it, "now, at this load (idle clocks are low)%s",
                     is_m40(name, major, minor) ? "; the M40 boosts to 1114 MHz, memory 3004 MHz"
                                                : "");
    }

    unsigned long long rs = 0;
    if (t->throttle && t->throttle(d, &rs) == M40__NVML_SUCCESS) {
        char names[192];
        m40__throttle_names(rs, names, sizeof names);
        m40_doctor_level l = M40_DOCTOR_OK;
        if (rs & (M40__THR_HW_SLOWDOWN | M40__THR_HW_THERMAL | M40__THR_HW_POWER_BRAKE))
            l = M40_DOCTOR_FAIL;
        else if (rs & (M40__THR_SW_THERMAL | M40__THR_SW_POWER_CAP))
            l = M40_DOCTOR_WARN;
        m40_doctor_item *it = m40__doc_add(r, l, g, "gpu.throttle", "%s", names);
        if (l == M40_DOCTOR_OK) {
            m40__doc_why(
                it, "no slowing reason active now (idle and clock-setting reasons are normal)");
        } else if (l == M40_DOCTOR_FAIL) {
            m40__doc_why(
                it,
                "hardware slowdown active: %s (overheating, or the power supply signalled a "
                "brake)",
                names);
            m40__doc_fix(it,
                         "cool the card (airflow through the passive heatsink), check both power "
                         "connectors and the PSU; benchmark numbers now are meaningless");
        } else {
            m40__doc_why(it, "the driver is holding the clocks down: %s", names);
            m40__doc_fix(it, "%s",
                         (rs & M40__THR_SW_THERMAL) ? "improve cooling; re-run when the card is "
                                                      "below 80 C"
                                                    : "check the power limit (nvidia-smi -q -d "
                                                      "POWER); benchmark numbers are capped");
        }
    }
}

/* CUDA-side per-GPU checks: code for the device, then NVML, then functional. */
static void check_cuda_gpu(doc_state *s, int g, const m40__doc_cuda_dev *p, m40__nvml_dev d,
                           const m40_doctor_options *opt) {
    const m40__doc_sys *sys = s->sys;
    m40_doctor_report *r = s->r;
    m40_doctor_item *it = m40__doc_add(r, M40_DOCTOR_INFO, g, "gpu", "%s, cc %d.%d, %d SMs",
                                       p->name, p->cc_major, p->cc_minor, p->sm_count);
    if (p->cc_major == 5)
        m40__doc_why(it, "Maxwell: %s",
                     is_m40(p->name, p->cc_major, p->cc_minor)
                         ? "a Tesla M40, the card libm40 is tuned for"
                         : "libm40's target generation (figures below are for an M40)");
    else
        m40__doc_why(
            it, "not a Maxwell GPU: libm40's kernels run here (written for sm_52), but the M40 "
                "reference figures do not apply");

    /* code for the device: the build's architectures, then the runtime's answer */
    char w[320];
    int code = m40__doc_code_for(s->archs, p->cc_major, p->cc_minor, w, sizeof w);
    int bin = 0, ptx = 0, pe = -1;
    if (sys->cuda_probe) pe = sys->cuda_probe(sys->user, g, &bin, &ptx);
    int no_image = pe == M40__CUDA_ERR_NO_KERNEL_IMAGE ||
                   pe == M40__CUDA_ERR_INVALID_DEVICE_FUNCTION;
    if (pe == 0 && code == M40__CODE_NONE) code = M40__CODE_SASS; /* archs unparsable ("native") */
    if (no_image || (pe < 0 && code == M40__CODE_NONE)) {
        it = m40__doc_add(r, M40_DOCTOR_FAIL, g, "gpu.code", "no code for cc %d.%d (archs %s)",
                          p->cc_major, p->cc_minor, s->archs);
        m40__doc_why(it, "%s%s%s", w, no_image ? "; cudaFuncGetAttributes: " : "",
                     no_image ? cerr(s, pe) : "");
        m40__doc_fix(it,
                     "rebuild libm40 with -DCMAKE_CUDA_ARCHITECTURES=%d%d (M40: 52, with CUDA "
                     "11.8-12.9)",
                     p->cc_major, p->cc_minor);
    } else if (pe > 0) {
        it = m40__doc_add(r, M40_DOCTOR_WARN, g, "gpu.code", "probe failed");
        m40__doc_why(it, "cudaFuncGetAttributes on a library kernel: %s (%s)", cerr(s, pe), w);
    } else if (code == M40__CODE_PTX) {
        it = m40__doc_add(r, M40_DOCTOR_WARN, g, "gpu.code", "PTX JIT (archs %s)", s->archs);
        m40__doc_why(it, "%s", w);
        m40__doc_fix(it,
                     "for fast start-up build machine code for this GPU: "
                     "-DCMAKE_CUDA_ARCHITECTURES=%d%d",
                     p->cc_major, p->cc_minor);
    } else {
        it = m40__doc_add(r, M40_DOCTOR_OK, g, "gpu.code", "sm_%d code (archs %s)",
                          pe == 0 && bin ? bin : 10 * p->cc_major + p->cc_minor, s->archs);
        if (pe == 0)
            m40__doc_why(it, "%s; a library kernel reports binaryVersion %d, ptxVersion %d", w, bin,
                         ptx);
        else
            m40__doc_why(it, "%s", w);
    }

    check_nvml_gpu(s, g, d, p->name, p->cc_major, p->cc_minor, p->total_bytes);

    if (!opt->functional) return;
    if (!sys->functional) {
        it = m40__doc_add(r, M40_DOCTOR_SKIP, g, "func", "not run");
        m40__doc_why(it, "no functional check in this build");
        return;
    }
    m40__doc_func f;
    memset(&f, 0, sizeof f);
    f.kernel_ok = f.sgemm_ok = -1;
    f.copy_gbs = f.sgemm_gflops = -1;
    int fe = sys->functional(sys->user, g, &f);
    int m40 = is_m40(p->name, p->cc_major, p->cc_minor);
    if (f.kernel_ok < 0) {
        it = m40__doc_add(r, M40_DOCTOR_FAIL, g, "func.kernel", "did not run");
        m40__doc_why(it, "%s",
                     f.err[0] ? f.err
                     : fe     ? "the functional check failed to start"
                              : "unknown");
        m40__doc_fix(it, "see the gpu.code line; run the GPU tests (ctest -L gpu) for details");
        return;
    }
    it = m40__doc_add(r, f.kernel_ok ? M40_DOCTOR_OK : M40_DOCTOR_FAIL, g, "func.kernel",
                      "fill_random + add on %lld floats: max |diff| vs CPU %.3g", f.kernel_n,
                      f.kernel_max_diff);
    m40__doc_why(it, "%s",
                 f.kernel_ok ? "the GPU result is bit-identical to the CPU reference"
                             : "the GPU computes a different result from the CPU reference");
    if (!f.kernel_ok)
        m40__doc_fix(it, "run ctest -L gpu; suspect the driver/JIT or failing memory (ECC)");

    if (f.copy_gbs >= 0) {
        double pct = 100.0 * f.copy_gbs / M40__M40_GBS;
        if (m40) {
            /* a device copy reaches ~75-80% of the 288 GB/s peak on a healthy M40 */
            it = m40__doc_add(r, pct >= 60 ? M40_DOCTOR_OK : M40_DOCTOR_WARN, g, "func.copy",
                              "%.1f GB/s (%.0f MiB device copy, read + write) = %.0f%% of 288 GB/s",
                              f.copy_gbs, f.copy_mib, pct);
            m40__doc_why(it, "%s",
                         pct >= 60 ? "at least 60% of the M40's memory bandwidth"
                                   : "below 60% of the M40's memory bandwidth: memory clock "
                                     "held down (throttling, power) or a busy card");
            if (pct < 60)
                m40__doc_fix(it, "check gpu.throttle and gpu.clocks above; re-run when idle");
        } else {
            it = m40__doc_add(r, M40_DOCTOR_INFO, g, "func.copy",
                              "%.1f GB/s (%.0f MiB device copy, read + write)", f.copy_gbs,
                              f.copy_mib);
            m40__doc_why(it, "no reference figure for %s (the M40 reaches up to 288 GB/s)",
                         p->name);
        }
    } else if (f.err[0]) {
        it = m40__doc_add(r, M40_DOCTOR_WARN, g, "func.copy", "not measured");
        m40__doc_why(it, "%s", f.err);
    }

    if (f.sgemm_ok >= 0) {
        it = m40__doc_add(r, f.sgemm_ok ? M40_DOCTOR_OK : M40_DOCTOR_FAIL, g, "func.sgemm.check",
                          "m40_matmul 127x129x131 vs CPU: max rel err %.2g", f.sgemm_max_rel);
        m40__doc_why(it, "%s",
                     f.sgemm_ok ? "within FP32 rounding of the CPU reference"
                                : "the GPU SGEMM disagrees with the CPU reference");
        if (!f.sgemm_ok) m40__doc_fix(it, "run ctest -L gpu for details");
    }
    if (f.sgemm_gflops >= 0) {
        double pct = 100.0 * f.sgemm_gflops / M40__M40_GFLOPS;
        if (m40) {
            it = m40__doc_add(r, pct >= 50 ? M40_DOCTOR_OK : M40_DOCTOR_WARN, g, "func.sgemm",
                              "%.0f GFLOP/s on %d^3 (%.2f ms) = %.0f%% of 6840 GFLOP/s",
                              f.sgemm_gflops, f.sgemm_n, f.sgemm_ms, pct);
            m40__doc_why(it, "%s",
                         pct >= 50 ? "at least half of the M40's FP32 peak"
                                   : "below half of the M40's FP32 peak: clocks held down "
                                     "(see gpu.throttle) or another process on the GPU");
            if (pct < 50)
                m40__doc_fix(it, "cool the card, check the power limit, re-run when idle");
        } else {
            it = m40__doc_add(r, M40_DOCTOR_INFO, g, "func.sgemm", "%.0f GFLOP/s on %d^3 (%.2f ms)",
                              f.sgemm_gflops, f.sgemm_n, f.sgemm_ms);
            m40__doc_why(it, "no reference figure for %s (the M40's FP32 peak is 6840 GFLOP/s)",
                         p->name);
        }
    }
}

static void check_libs(doc_state *s) {
    const m40__doc_sys *sys = s->sys;
    m40_doctor_report *r = s->r;
    int M = 0, m = 0, pt = 0;
    if (sys->cublas_version && sys->cublas_version(sys->user, &M, &m, &pt) == 0) {
        /* cuBLAS 13 (CUDA 13) dropped sm_5x */
        int ok = M < 13;
        m40_doctor_item *it = m40__doc_add(r,
                                           ok                ? M40_DOCTOR_OK
                                           : s->maxwell_seen ? M40_DOCTOR_FAIL
                                                             : M40_DOCTOR_INFO,
                                           -1, "cublas", "%d.%d.%d", M, m, pt);
        m40__doc_why(it, "%s",
                     ok ? "cuBLAS 11.x/12.x carries Maxwell code"
                        : "cuBLAS 13 has no Maxwell code (fine for the GPUs here only if none "
                          "is an M40)");
        if (!ok && s->maxwell_seen) m40__doc_fix(it, "build libm40 with CUDA 11.8-12.9 for an M40");
    } else if (sys->cuda_versions) {
        m40_doctor_item *it = m40__doc_add(r, M40_DOCTOR_WARN, -1, "cublas", "version unknown");
        m40__doc_why(it, "cublasGetProperty failed");
    }
    size_t v = 0;
    char where[256] = "";
    if (!sys->cudnn_version) return;
    if (sys->cudnn_version(sys->user, &v, where, sizeof where) != 0) {
        m40_doctor_item *it = m40__doc_add(r, M40_DOCTOR_INFO, -1, "cudnn", "not found");
        m40__doc_why(it, "%s; libm40 does not need it, the PyTorch/cuDNN baselines do", where);
        m40__doc_fix(it,
                     "for Maxwell use cuDNN <= 9.10, e.g. pip install nvidia-cudnn-cu11==9.10.2.21 "
                     "and add its lib/ to LD_LIBRARY_PATH");
        return;
    }
    int cM = 0, cm = 0, cp = 0;
    m40__doc_cudnn_split(v, &cM, &cm, &cp);
    int ok = cM < 9 || (cM == 9 && cm <= 10);
    m40_doctor_level l = ok ? M40_DOCTOR_OK : s->maxwell_seen ? M40_DOCTOR_FAIL : M40_DOCTOR_INFO;
    m40_doctor_item *it = m40__doc_add(r, l, -1, "cudnn", "%d.%d.%d (%s)", cM, cm, cp, where);
    m40__doc_why(it, "%s",
                 ok ? "cuDNN up to 9.10 carries Maxwell code"
                    : "cuDNN 9.11+ has no Maxwell code (convolutions fail on an M40)");
    if (!ok) m40__doc_fix(it, "on an M40 use cuDNN <= 9.10, e.g. nvidia-cudnn-cu11==9.10.2.21");
}

#define M40__MAX_GPUS 64

m40_status m40__doctor_run_sys(const m40__doc_sys *sys, const m40_doctor_options *opt_in,
                               m40_doctor_report **out) {
    if (!out) return M40_ERR_INVALID_ARG;
    *out = NULL;
    if (!sys) return M40_ERR_INVALID_ARG;
    m40_doctor_options opt;
    m40_doctor_options_init(&opt);
    if (opt_in) {
        if (opt_in->struct_size < sizeof opt) return M40_ERR_INVALID_ARG;
        opt = *opt_in;
    }
    /* -1 means every GPU; any other negative is a caller bug, not "all" */
    if (opt.device < -1) return M40_ERR_INVALID_ARG;
    m40_doctor_report *r = calloc(1, sizeof *r);
    if (!r) return M40_ERR_OOM_HOST;
    doc_state s = {.sys = sys, .r = r};
    const m40__nvml *t = sys->nvml;

    check_build(&s);

    /* NVML's view: count, handles, and whether any GPU is Maxwell */
    unsigned nn = 0;
    m40__nvml_dev nd[M40__MAX_GPUS];
    int nd_used[M40__MAX_GPUS] = {0};
    if (t && t->device_count(&nn) != M40__NVML_SUCCESS) nn = 0;
    if (nn > M40__MAX_GPUS) nn = M40__MAX_GPUS;
    for (unsigned i = 0; i < nn; i++) {
        nd[i] = NULL;
        if (t->device_by_index(i, &nd[i]) != M40__NVML_SUCCESS) nd[i] = NULL;
        int M = 0, m = 0;
        if (nd[i] && t->cc && t->cc(nd[i], &M, &m) == M40__NVML_SUCCESS && M == 5)
            s.maxwell_seen = 1;
    }

    /* CUDA's view */
    int cn = 0, ce = -1;
    m40__doc_cuda_dev cd[M40__MAX_GPUS];
    if (sys->cuda_count) {
        ce = sys->cuda_count(sys->user, &cn);
        if (ce != M40__CUDA_SUCCESS) cn = 0;
        if (cn > M40__MAX_GPUS) cn = M40__MAX_GPUS;
        for (int i = 0; i < cn; i++) {
            memset(&cd[i], 0, sizeof cd[i]);
            if (sys->cuda_props(sys->user, i, &cd[i]) != 0)
                snprintf(cd[i].name, sizeof cd[i].name, "(properties unavailable)");
            if (cd[i].cc_major == 5) s.maxwell_seen = 1;
        }
        /* An ordinal CUDA does not list is the caller's mistake. With no GPU
        ** (cn == 0) the report itself says why, so that is not rejected. */
        if (cn > 0 && opt.device >= cn) {
            m40_doctor_report_destroy(r);
            return M40_ERR_INVALID_ARG;
        }
    }

    check_driver(&s, (int)nn);
    check_cuda_versions(&s);

    if (sys->cuda_count) {
        if (ce != M40__CUDA_SUCCESS || cn == 0) {
            m40_doctor_item *it =
                m40__doc_add(r, M40_DOCTOR_FAIL, -1, "gpu.count", "CUDA sees no GPU");
            if (ce == M40__CUDA_ERR_NO_DEVICE || (ce == 0 && cn == 0))
                m40__doc_why(it, "no CUDA-capable device%s",
                             nn ? " (NVML lists some: are they hidden by "
                                  "CUDA_VISIBLE_DEVICES?)"
                                : "");
            else if (ce == M40__CUDA_ERR_INSUFFICIENT_DRIVER)
                m40__doc_why(it, "the CUDA driver is missing or older than the runtime: %s",
                             cerr(&s, ce));
            else
                m40__doc_why(it, "cudaGetDeviceCount: %s", cerr(&s, ce));
            m40__doc_fix(it, "%s",
                         nn ? "check CUDA_VISIBLE_DEVICES and nvidia-smi"
                            : "check that the card is seated and powered (lspci | grep -i "
                              "nvidia), that the driver loaded (dmesg | grep NVRM), and that "
                              "R580 or older drives it");
        } else {
            m40__doc_add(r, M40_DOCTOR_OK, -1, "gpu.count", "%d CUDA device%s", cn,
                         cn == 1 ? "" : "s");
            s.cuda_ok = 1;
        }
    } else if (t) {
        m40_doctor_item *it =
            m40__doc_add(r, nn ? M40_DOCTOR_INFO : M40_DOCTOR_FAIL, -1, "gpu.count",
                         "%u GPU%s seen by NVML", nn, nn == 1 ? "" : "s");
        if (!nn) m40__doc_why(it, "the driver is loaded but lists no GPU");
    }

    check_libs(&s);

    /* per GPU: CUDA ordinals matched to NVML by UUID */
    for (int i = 0; i < cn; i++) {
        if (opt.device >= 0 && i != opt.device) continue;
        m40__nvml_dev d = NULL;
        if (cd[i].has_uuid && t && t->uuid) {
            char want[64], got[96];
            m40__uuid_str(cd[i].uuid, want, sizeof want);
            for (unsigned k = 0; k < nn && !d; k++)
                if (nd[k] && t->uuid(nd[k], got, sizeof got) == 0 && strcmp(got, want) == 0) {
                    d = nd[k];
                    nd_used[k] = 1;
                }
        } else if (t && (unsigned)i < nn && nn == (unsigned)cn) {
            d = nd[i]; /* no UUIDs: same order if the counts agree */
            nd_used[i] = 1;
        }
        check_cuda_gpu(&s, i, &cd[i], d, &opt);
    }
    /* GPUs only NVML sees (no CUDA in this build, or hidden from CUDA) */
    for (unsigned k = 0; k < nn; k++) {
        if (nd_used[k] || !nd[k]) continue;
        if (s.cuda_ok && opt.device >= 0) continue;
        char name[96] = "?";
        int M = 0, m = 0;
        if (t->name) t->name(nd[k], name, sizeof name);
        if (t->cc) t->cc(nd[k], &M, &m);
        m40_doctor_item *it = m40__doc_add(r, M40_DOCTOR_INFO, (int)k, "gpu",
                                           "%s, cc %d.%d (NVML index %u)", name, M, m, k);
        m40__doc_why(it, "%s",
                     s.cuda_ok ? "seen by NVML but not by CUDA (CUDA_VISIBLE_DEVICES?)"
                               : "seen by NVML only: CUDA checks could not run");
        check_nvml_gpu(&s, (int)k, nd[k], name, M, m, 0);
    }

    if (r->oom) {
        m40_doctor_report_destroy(r);
        return M40_ERR_OOM_HOST;
    }
    *out = r;
    return M40_OK;
}

m40_status m40_doctor_run(const m40_doctor_options *opt, m40_doctor_report **out) {
    if (!out) return M40_ERR_INVALID_ARG;
    *out = NULL;
    if (opt && opt->struct_size < sizeof(m40_doctor_options)) return M40_ERR_INVALID_ARG;
    if (opt && opt->device < -1) return M40_ERR_INVALID_ARG; /* before loading NVML */
    m40__doc_sys sys;
    m40__nvml nvml;
    char why_nvml[256];
    m40__doc_sys_real_open(&sys, &nvml, why_nvml, sizeof why_nvml);
    m40_status st = m40__doctor_run_sys(&sys, opt, out);
    m40__doc_sys_real_close(&sys, &nvml);
    return st;
}
