#!/bin/bash
# End-to-end tests on the real local cluster (dev/up.sh --no-demo first):
# srun -> spank_crisp.so -> crispd -> containerd's CRI -> tasks in the image.
# Each test asserts what a user would check. Ends with "N passed, N failed".
#   run.sh           every test
#   run.sh NAME...   only test_NAME...
source "$(dirname "$0")/../../dev/lib.sh"
set +e -o pipefail
source "$CRISP_SRC/tests/integration/lib.sh"
for area in basics images pulls lifecycle security attack root_reads pyxis everyday namespace squashfs multinode gpu spares metrics; do
  source "$CRISP_SRC/tests/integration/${area}_tests.sh"
done

setup
t os_release_is_the_images
t tasks_share_one_container
t stdio_and_exit_codes
t slurm_env_and_image_env
t mounts_rw_and_ro
t workdir
t concurrent_pulls_are_merged
t long_cold_pull_trips_no_slurm_timeout
t nothing_left_after_a_job
t concurrent_steps_of_one_job
t scancel_kills_and_cleans_up
t missing_image_fails_fast
t prolog_pulls_the_jobs_image
t scancel_during_a_slow_pull_ends_the_job
t progress_lines_for_a_slow_pull_only
t stalled_registry_fails_within_the_stall_limit
t two_nodes_pull_each_layer_once_through_the_cache
t registry_errors_each_get_their_line
t full_disk_during_a_pull_leaves_nothing
t a_user_cannot_pile_up_pulls
t malformed_input_rejected_before_allocation
t inaccessible_mount_source
t crispd_down_times_out_with_a_message
t hung_crispd_times_out_with_a_message
t setuid_binary_grants_nothing
t user_ids_inside
t non_root_cannot_create_containers
t restarted_crispd_loses_nothing
t users_see_only_their_jobs
t user_cannot_signal_crispd
t swapped_mount_source_mounts_nothing_unreadable
t malformed_credentials_answered_with_a_line
t connection_flood_does_not_starve_steps
t entrypoint_output_is_bounded
t cancelled_named_create_does_not_linger
t private_image_needs_the_users_own_credentials
t forged_pmix_socket_is_not_followed
t container_processes_stay_in_the_jobs_cgroup
t named_container_processes_die_with_the_job
t read_only_host_mount_stays_read_only
t import_reads_nothing_a_user_can_swap
t imports_are_bounded
t entrypoint_namespaces_of_its_own_are_refused
t squashfs_gate_takes_no_magic_link
t crispctl_pull
t container_name_kept_across_steps
t container_scope_global_by_default
t remap_root
t writable_and_readonly
t mount_home
t tmpfs_and_relative_mounts
t entrypoint
t environment_variables
t rootfs_is_the_users
t setuid_file_written_inside_grants_nothing
t named_container_keeps_the_users_changes
t apt_under_remap_root_from_a_loopback_repository
t the_user_exists_inside
t locale_home_and_entrypoint_variables
t workdir_as_pyxis
t mounts_as_pyxis
t option_variables_yield_to_the_command_line
t interactive_terminal
t attach_to_a_running_step
t attach_to_a_running_unnamed_step_by_its_id
t unshare_net_ipc_uts
t unshare_refuses_unknown_namespaces_before_allocation
t joining_with_and_without_namespaces
t squashfs_image_runs_with_its_env_and_workdir
t squashfs_users_own_image_is_extracted_not_mounted
t squashfs_named_container_keeps_changes
t squashfs_on_two_nodes
t squashfs_bad_files_get_one_line_and_leave_nothing
t squashfs_cancelled_step_frees_the_file
t squashfs_survives_killed_daemons
t container_save_cycle
t container_save_errors_get_one_line
t crispctl_import_runs_as_the_registry_image_does
t squashfs_entrypoint_runs_as_the_registry_images
t unsupported_and_malformed_options
t plugstack_arguments
t sbatch_runs_the_script_inside
t salloc_steps_use_the_image
t pytorch_variables
t pmix_directory_reaches_the_tasks
t image_reference_forms
t registry_credentials
t two_nodes_one_container_each
t mpi_pmix_openmpi
t mpi_pmi2_mpich
t gpus_follow_the_allocation
t forged_gpu_variable_gets_no_gpu
t rdma_devices
t gpus_bound_per_task
t prometheus_sees_setups_and_failures
t example_dashboard_and_alerts_query_what_crispd_serves
t metrics_show_no_user_and_stall_no_step
t metrics_http_server_is_nobodys
t crispctl_json_for_scripts
if spares_on; then
  t claimed_spare_shows_exactly_what_a_new_container_shows
  t a_spare_is_never_another_users
  t a_spare_of_a_moved_tag_is_passed_over
  t a_claimed_spare_goes_with_its_step
  t unused_spares_go_after_their_grace
  t a_symlink_in_the_image_never_leads_a_claims_mount
fi
((not_run)) && echo "integration: $not_run not run here (named above with why)"
echo "integration: $passed passed, $failed failed"
((failed == 0))
