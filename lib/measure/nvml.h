/* NVML as a table of function pointers, filled by dlopen of
** libnvidia-ml.so.1 (m40__nvml_open) or by a test's fakes. The signatures
** are NVML's (nvml.h is not needed to build: the subset is declared here).
** Any pointer may be NULL (an old driver without that entry point): callers
** treat that as NVML_ERROR_NOT_SUPPORTED. Internal; not installed. */
#ifndef M40_DOCTOR_NVML_H
#define M40_DOCTOR_NVML_H

#include <stddef.h>

/* nvmlReturn_t values used here */
#define M40__NVML_SUCCESS 0
#define M40__NVML_ERROR_UNINITIALIZED 1
#define M40__NVML_ERROR_NOT_SUPPORTED 3
#define M40__NVML_ERROR_NO_PERMISSION 4
#define M40__NVML_ERROR_DRIVER_NOT_LOADED 9
#define M40__NVML_ERROR_GPU_IS_LOST 15
#define M40__NVML_ERROR_UNKNOWN 999

/* nvmlClockType_t */
#define M40__NVML_CLOCK_SM 1
#define M40__NVML_CLOCK_MEM 2
/* nvmlMemoryErrorType_t, nvmlEccCounterType_t */
#define M40__NVML_ECC_CORRECTED 0
#define M40__NVML_ECC_UNCORRECTED 1
#define M40__NVML_ECC_VOLATILE 0
#define M40__NVML_ECC_AGGREGATE 1

/* nvmlClocksEventReasons (a.k.a. ClocksThrottleReasons) bits */
#define M40__THR_GPU_IDLE 0x1ull
#define M40__THR_APP_CLOCKS 0x2ull
#define M40__THR_SW_POWER_CAP 0x4ull
#define M40__THR_HW_SLOWDOWN 0x8ull
#define M40__THR_SYNC_BOOST 0x10ull
#define M40__THR_SW_THERMAL 0x20ull
#define M40__THR_HW_THERMAL 0x40ull
#define M40__THR_HW_POWER_BRAKE 0x80ull
#define M40__THR_DISPLAY_CLOCKS 0x100ull
/* the reasons that mean "slower than the card can run" */
#define M40__THR_THERMAL (M40__THR_SW_THERMAL | M40__THR_HW_THERMAL)
#define M40__THR_POWER (M40__THR_SW_POWER_CAP | M40__THR_HW_POWER_BRAKE)
#define M40__THR_SLOWING (M40__THR_THERMAL | M40__THR_POWER | M40__THR_HW_SLOWDOWN)

typedef struct m40__nvml_dev_st *m40__nvml_dev; /* nvmlDevice_t */
typedef struct m40__nvml_memory {              /* nvmlMemory_t */
    unsigned long long total, free, used;
} m40__nvml_memory;

typedef struct m40__nvml {
    void *dl; /* dlopen handle; NULL for fakes */
    int (*init)(void);                                    /* nvmlInit_v2 */
    int (*shutdown)(void);                                /* nvmlShutdown */
    const char *(*error_string)(int);                     /* nvmlErrorString */
    int (*driver_version)(char *, unsigned);              /* nvmlSystemGetDriverVersion */
    int (*cuda_driver_version)(int *);                    /* nvmlSystemGetCudaDriverVersion_v2 */
    int (*device_count)(unsigned *);                      /* nvmlDeviceGetCount_v2 */
    int (*device_by_index)(unsigned, m40__nvml_dev *);    /* nvmlDeviceGetHandleByIndex_v2 */
    int (*name)(m40__nvml_dev, char *, unsigned);         /* nvmlDeviceGetName */
    int (*uuid)(m40__nvml_dev, char *, unsigned);         /* nvmlDeviceGetUUID */
    int (*cc)(m40__nvml_dev, int *, int *);               /* nvmlDeviceGetCudaComputeCapability */
    int (*memory)(m40__nvml_dev, m40__nvml_memory *);     /* nvmlDeviceGetMemoryInfo */
    int (*ecc_mode)(m40__nvml_dev, int *, int *);         /* nvmlDeviceGetEccMode (current, pending) */
    int (*ecc_errors)(m40__nvml_dev, int, int, unsigned long long *); /* nvmlDeviceGetTotalEccErrors */
    int (*pcie_gen)(m40__nvml_dev, unsigned *);           /* nvmlDeviceGetCurrPcieLinkGeneration */
    int (*pcie_gen_max)(m40__nvml_dev, unsigned *);       /* nvmlDeviceGetMaxPcieLinkGeneration */
    int (*pcie_width)(m40__nvml_dev, unsigned *);         /* nvmlDeviceGetCurrPcieLinkWidth */
    int (*pcie_width_max)(m40__nvml_dev, unsigned *);     /* nvmlDeviceGetMaxPcieLinkWidth */
    int (*persistence)(m40__nvml_dev, int *);             /* nvmlDeviceGetPersistenceMode */
    int (*temperature)(m40__nvml_dev, int, unsigned *);   /* nvmlDeviceGetTemperature (0 = GPU) */
    int (*power_usage)(m40__nvml_dev, unsigned *);        /* nvmlDeviceGetPowerUsage, mW */
    int (*power_limit)(m40__nvml_dev, unsigned *);        /* nvmlDeviceGetEnforcedPowerLimit, mW */
    int (*power_default)(m40__nvml_dev, unsigned *);      /* nvmlDeviceGetPowerManagementDefaultLimit */
    int (*clock)(m40__nvml_dev, int, unsigned *);         /* nvmlDeviceGetClockInfo, MHz */
    int (*clock_max)(m40__nvml_dev, int, unsigned *);     /* nvmlDeviceGetMaxClockInfo */
    int (*throttle)(m40__nvml_dev, unsigned long long *); /* nvmlDeviceGetCurrentClocksEventReasons */
} m40__nvml;

/* Loads libnvidia-ml.so.1 and calls nvmlInit. On failure returns nonzero
** and writes why into `why` (library missing, init failed and its reason). */
int m40__nvml_open(m40__nvml *t, char *why, size_t n);
/* nvmlShutdown + dlclose; safe on a zeroed or failed table. */
void m40__nvml_close(m40__nvml *t);
/* NVML's error text, or "NVML error N". */
const char *m40__nvml_errstr(const m40__nvml *t, int rc);

/* Comma-separated names of the reason bits ("sw_power_cap,hw_thermal"),
** "none" for 0. Returns buf. */
const char *m40__throttle_names(unsigned long long reasons, char *buf, size_t n);

#endif
