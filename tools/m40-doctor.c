/* m40-doctor: checks this machine's NVIDIA stack for a Tesla M40 (driver
** branch, CUDA versions, code for the device, memory, ECC, PCIe, thermals,
** cuBLAS/cuDNN, a quick functional check) and prints one line per check:
** OK / WARN / FAIL with the reason and the fix.
**
**   m40-doctor [--json] [--quick] [--device N]
**
** Exit status: 0 no FAIL, 1 at least one FAIL, 2 bad usage or internal error. */
#include <m40/doctor.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f,
            "usage: m40-doctor [--json] [--quick] [--device N]\n"
            "  --json      one JSON object on stdout instead of the text report\n"
            "  --quick     skip the functional checks (kernel, copy bandwidth, SGEMM)\n"
            "  --device N  check only CUDA device N\n"
            "exit status: 0 = no FAIL, 1 = at least one FAIL, 2 = usage/internal error\n");
}

int main(int argc, char **argv) {
    int json = 0;
    m40_doctor_options opt;
    m40_doctor_options_init(&opt);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) json = 1;
        else if (strcmp(argv[i], "--quick") == 0) opt.functional = 0;
        else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            /* a CUDA ordinal: digits only, 0..1023 (atoi took "-5" and "x") */
            const char *v = argv[++i];
            char *end;
            errno = 0;
            long d = strtol(v, &end, 10);
            if (end == v || *end || errno || d < 0 || d > 1023 || v[0] == '-' || v[0] == '+' ||
                v[0] == ' ') {
                fprintf(stderr, "m40-doctor: --device wants a CUDA device number 0..1023, not '%s'\n", v);
                return 2;
            }
            opt.device = (int)d;
        }
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "m40-doctor: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    m40_doctor_report *r = NULL;
    m40_status st = m40_doctor_run(&opt, &r);
    if (st != M40_OK) {
        fprintf(stderr, "m40-doctor: %s\n", m40_status_str(st));
        return 2;
    }
    int fails = m40_doctor_report_get_tally(r, M40_DOCTOR_FAIL);
    if (json) {
        size_t len = 0;
        char *buf = NULL;
        if (m40_doctor_report_json(r, NULL, 0, &len) != M40_OK || !(buf = malloc(len + 1)) ||
            m40_doctor_report_json(r, buf, len + 1, &len) != M40_OK) {
            fprintf(stderr, "m40-doctor: could not format JSON\n");
            free(buf);
            m40_doctor_report_destroy(r);
            return 2;
        }
        printf("%s\n", buf);
        free(buf);
    } else {
        printf("m40-doctor (libm40 %s, %s)\n", m40_version(), m40_build_info());
        for (int i = 0; i < m40_doctor_report_get_count(r); i++) {
            const m40_doctor_item *it = m40_doctor_report_get_item(r, i);
            char where[48];
            if (it->gpu >= 0) snprintf(where, sizeof where, "gpu%d %s", it->gpu, it->check);
            else snprintf(where, sizeof where, "%s", it->check);
            printf("%-4s  %-22s %s\n", m40_doctor_level_str(it->level), where, it->value);
            if (it->reason[0]) printf("      %-22s why: %s\n", "", it->reason);
            if (it->fix[0]) printf("      %-22s fix: %s\n", "", it->fix);
        }
        printf("summary: %d OK, %d WARN, %d FAIL, %d SKIP, %d INFO -> exit %d\n",
               m40_doctor_report_get_tally(r, M40_DOCTOR_OK), m40_doctor_report_get_tally(r, M40_DOCTOR_WARN),
               fails, m40_doctor_report_get_tally(r, M40_DOCTOR_SKIP),
               m40_doctor_report_get_tally(r, M40_DOCTOR_INFO), fails ? 1 : 0);
    }
    m40_doctor_report_destroy(r);
    return fails ? 1 : 0;
}
