/* NVML through dlopen: libm40 never links it, so a machine without the
** NVIDIA driver still loads the library and the doctor can say what is
** missing. */
#define _POSIX_C_SOURCE 200809L
#include "nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* dlsym's void* to a function pointer: POSIX guarantees this works. */
#define M40__SYM(field, name) (*(void **)(&t->field) = dlsym(t->dl, name))

int m40__nvml_open(m40__nvml *t, char *why, size_t n) {
    memset(t, 0, sizeof *t);
    t->dl = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!t->dl) {
        const char *e = dlerror();
        snprintf(why, n, "libnvidia-ml.so.1 could not be loaded (%s)",
                 e ? e : "unknown dlopen error");
        return 1;
    }
    M40__SYM(init, "nvmlInit_v2");
    if (!t->init) M40__SYM(init, "nvmlInit");
    M40__SYM(shutdown, "nvmlShutdown");
    M40__SYM(error_string, "nvmlErrorString");
    M40__SYM(driver_version, "nvmlSystemGetDriverVersion");
    M40__SYM(cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2");
    if (!t->cuda_driver_version) M40__SYM(cuda_driver_version, "nvmlSystemGetCudaDriverVersion");
    M40__SYM(device_count, "nvmlDeviceGetCount_v2");
    if (!t->device_count) M40__SYM(device_count, "nvmlDeviceGetCount");
    M40__SYM(device_by_index, "nvmlDeviceGetHandleByIndex_v2");
    if (!t->device_by_index) M40__SYM(device_by_index, "nvmlDeviceGetHandleByIndex");
    M40__SYM(name, "nvmlDeviceGetName");
    M40__SYM(uuid, "nvmlDeviceGetUUID");
    M40__SYM(cc, "nvmlDeviceGetCudaComputeCapability");
    M40__SYM(memory, "nvmlDeviceGetMemoryInfo");
    M40__SYM(ecc_mode, "nvmlDeviceGetEccMode");
    M40__SYM(ecc_errors, "nvmlDeviceGetTotalEccErrors");
    M40__SYM(pcie_gen, "nvmlDeviceGetCurrPcieLinkGeneration");
    M40__SYM(pcie_gen_max, "nvmlDeviceGetMaxPcieLinkGeneration");
    M40__SYM(pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
    M40__SYM(pcie_width_max, "nvmlDeviceGetMaxPcieLinkWidth");
    M40__SYM(persistence, "nvmlDeviceGetPersistenceMode");
    M40__SYM(temperature, "nvmlDeviceGetTemperature");
    M40__SYM(power_usage, "nvmlDeviceGetPowerUsage");
    M40__SYM(power_limit, "nvmlDeviceGetEnforcedPowerLimit");
    M40__SYM(power_default, "nvmlDeviceGetPowerManagementDefaultLimit");
    M40__SYM(clock, "nvmlDeviceGetClockInfo");
    M40__SYM(clock_max, "nvmlDeviceGetMaxClockInfo");
    /* renamed in R535; the old name stays exported for compatibility */
    M40__SYM(throttle, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!t->throttle) M40__SYM(throttle, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!t->init || !t->device_count || !t->device_by_index) {
        snprintf(why, n, "libnvidia-ml.so.1 lacks nvmlInit/nvmlDeviceGetCount (a broken "
                         "or very old driver install)");
        dlclose(t->dl);
        memset(t, 0, sizeof *t);
        return 1;
    }
    int rc = t->init();
    if (rc != M40__NVML_SUCCESS) {
        if (rc == M40__NVML_ERROR_DRIVER_NOT_LOADED)
            snprintf(why, n, "the driver's libraries are installed but its kernel module is not "
                             "loaded (nvmlInit: %s): no NVIDIA GPU, or the module failed to "
                             "load (see dmesg | grep NVRM)",
                     m40__nvml_errstr(t, rc));
        else
            snprintf(why, n, "nvmlInit failed: %s (NVML error %d)", m40__nvml_errstr(t, rc), rc);
        dlclose(t->dl);
        memset(t, 0, sizeof *t);
        return 1;
    }
    return 0;
}

void m40__nvml_close(m40__nvml *t) {
    if (!t || !t->dl) return;
    if (t->shutdown) t->shutdown();
    dlclose(t->dl);
    memset(t, 0, sizeof *t);
}

const char *m40__nvml_errstr(const m40__nvml *t, int rc) {
    if (t && t->error_string) {
        const char *s = t->error_string(rc);
        if (s) return s;
    }
    switch (rc) {
    case M40__NVML_ERROR_UNINITIALIZED: return "NVML not initialized";
    case M40__NVML_ERROR_NOT_SUPPORTED: return "not supported";
    case M40__NVML_ERROR_NO_PERMISSION: return "no permission";
    case M40__NVML_ERROR_DRIVER_NOT_LOADED: return "driver not loaded";
    case M40__NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    default: return "NVML error";
    }
}

const char *m40__throttle_names(unsigned long long r, char *buf, size_t n) {
    static const struct { unsigned long long bit; const char *name; } tab[] = {
        {M40__THR_GPU_IDLE, "gpu_idle"},          {M40__THR_APP_CLOCKS, "app_clocks"},
        {M40__THR_SW_POWER_CAP, "sw_power_cap"},  {M40__THR_HW_SLOWDOWN, "hw_slowdown"},
        {M40__THR_SYNC_BOOST, "sync_boost"},      {M40__THR_SW_THERMAL, "sw_thermal"},
        {M40__THR_HW_THERMAL, "hw_thermal"},      {M40__THR_HW_POWER_BRAKE, "hw_power_brake"},
        {M40__THR_DISPLAY_CLOCKS, "display_clocks"}};
    if (!n) return buf;
    buf[0] = 0;
    size_t len = 0;
    unsigned long long known = 0;
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        known |= tab[i].bit;
        if (!(r & tab[i].bit)) continue;
        int w = snprintf(buf + len, n - len, "%s%s", len ? "," : "", tab[i].name);
        if (w < 0 || (size_t)w >= n - len) return buf;
        len += (size_t)w;
    }
    if (r & ~known) snprintf(buf + len, n - len, "%sother(0x%llx)", len ? "," : "", r & ~known);
    else if (!r) snprintf(buf, n, "none");
    return buf;
}
