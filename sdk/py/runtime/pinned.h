/* Included in every C file of CPython's build for packd (make py-runtime):
 * the build date and time sys.version shows, pinned to CPython 3.11.2's
 * release, so that the runtime built from the same sources is the same
 * bytes on any day (Modules/getbuildinfo.c takes these over __DATE__ and
 * __TIME__). */
#define DATE "Feb  8 2023"
#define TIME "00:00:00"
