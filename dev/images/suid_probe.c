/* Installed setuid-root in the test image: it prints the ids it runs with, so
 * a test can show that the setuid bit grants nothing inside a crisp container. */
#include <stdio.h>
#include <unistd.h>

int main(void) {
  printf("uid=%d euid=%d\n", (int)getuid(), (int)geteuid());
  return 0;
}
